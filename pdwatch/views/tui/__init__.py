"""The Textual dashboard of ``pdwatch watch`` / ``pdwatch replay`` (the only package importing Textual)."""
