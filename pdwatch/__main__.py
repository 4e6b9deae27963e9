from pdwatch.cli import main

raise SystemExit(main())
