"""A Sphinx extension: a page is read again when its source, or a file it depends on (a figure, a table, an included
file), holds other bytes than when it was last read, whatever the times say.

Sphinx alone reads a page again only when the source's modification time is later than the time it last read it. A
build run while the clock was ahead stores read times in the future, and the pages that then change are not read again:
their HTML is written from the old doctrees (issue 73: a chapter re-run with other parameters published the old run's
numbers). Here each page's content digest is stored in the build environment when it is read, and every page whose
digest differs is read again; time-based rebuilds still happen, so nothing is read less often than before.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

from ..io import sha256

ATTRIBUTE = "edition_read_digests"  # on the build environment (pickled with it): docname -> `content_digest` when it was read


def _digests(env: BuildEnvironment) -> dict[str, str]:
    """The environment's stored digests (an environment pickled before this extension has none yet)."""
    if not hasattr(env, ATTRIBUTE):
        setattr(env, ATTRIBUTE, {})
    return getattr(env, ATTRIBUTE)


def content_digest(env: BuildEnvironment, docname: str) -> str:
    """SHA-256 over a page's source file and every file it depends on (each by name; a missing one as missing)."""
    digest = hashlib.sha256()
    for name in [env.doc2path(docname, base=False), *sorted(env.dependencies.get(docname, ()))]:
        where = os.path.join(env.srcdir, name)
        digest.update(f"{name}\0{sha256(where) if os.path.isfile(where) else 'missing'}\n".encode())
    return digest.hexdigest()


def _store(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    _digests(env)[env.docname] = content_digest(env, env.docname)


def _changed(app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """The pages Sphinx would keep whose content is not what it was when they were read: read again."""
    stored = _digests(env)
    kept = (env.found_docs & env.all_docs.keys()) - added - changed - removed
    return sorted(docname for docname in kept if stored.get(docname) != content_digest(env, docname))


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _digests(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    theirs = _digests(other)
    _digests(env).update({docname: theirs[docname] for docname in docnames if docname in theirs})


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", _store, priority=900)  # after Sphinx's collectors have noted the page's dependencies (500)
    app.connect("env-get-outdated", _changed)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
