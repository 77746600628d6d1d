# The book's pinned environment as a container image, for preprint hosts that archive one (NeuroLibre-style, Code
# Ocean, Zenodo) and for anyone without Python 3.11. Build and rebuild the book:
#   docker build -t embedding-geometry-book .                      # + --build-arg WITH_TEX=1 for `make pdf`
#   docker run --rm -v "$PWD/_build:/book/_build" embedding-geometry-book            # make book (fetches the data first)
#   docker run --rm -v book-data:/book/data -v "$PWD/_build:/book/_build" embedding-geometry-book   # the data kept in a volume
#   docker run --rm -v "$PWD/_build:/book/_build" embedding-geometry-book make book PROFILE=quick
# WITH_DATA=1 puts the verified data into the image (each file fetched from its pinned commit), so that the image alone
# rebuilds the book offline. BOOK_DATA_MIRROR (a build arg and environment variable) names a mirror of the per-file layout.
# The base image by digest (its multi-platform index), so that every build starts from the same image; the tag is for
# readers. The digest is python:3.11-slim-bookworm as docker-library/repo-info records it in
# repos/python/remote/3.11-slim-bookworm.md (Python 3.11.16 on Debian bookworm, built 2026-08-25). To move to a newer
# build: `docker buildx imagetools inspect python:3.11-slim-bookworm` prints the tag's current digest.
FROM python:3.11-slim-bookworm@sha256:0bee7276f83efd4a1ee05bbbf4281d95ed28e079220a9457f25a93e3f1e3c31b

ARG WITH_TEX=0
ARG WITH_DATA=0
ARG BOOK_DATA_MIRROR=
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    BOOK_DATA_DIR=/book/data \
    BOOK_CACHE_DIR=/book/.cache \
    BOOK_DATA_MIRROR=$BOOK_DATA_MIRROR

COPY .ci/tex-packages /tmp/tex-packages
RUN apt-get update \
    && apt-get install -y --no-install-recommends make git ca-certificates \
    && if [ "$WITH_TEX" = 1 ]; then apt-get install -y --no-install-recommends $(cat /tmp/tex-packages); fi \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /book
# the environment first (its layer is reused while only chapters and lib change)
COPY requirements.txt requirements-models.txt pyproject.toml Makefile ./
COPY lib/__init__.py lib/__init__.py
RUN make env
COPY . .
RUN .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e . \
    && if [ "$WITH_DATA" = 1 ]; then make data; fi

CMD ["make", "book"]
