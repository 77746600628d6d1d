"""A built edition is published only as its HTML build wrote it (issue 73, item 5): the build records every file's
digest in its stamp, and `publish` names the first file that differs, was added or is missing."""

from __future__ import annotations

import pytest

from lib.edition import publishing
from lib.errors import BookError


def test_a_hand_edited_built_page_is_not_published(own_page_book):
    html = own_page_book.html
    assert publishing.publish(own_page_book) == html
    assert publishing.publish(own_page_book) == html and (html / ".nojekyll").is_file()  # what publish adds is not a change
    page = html / "book" / "chapters" / "01_page.html"
    built = page.read_text()
    assert "A line that rises." in built
    page.write_text(built.replace("A line that rises.", "A line that falls."))  # a value changed by hand
    remedy = r"; run `make book PROFILE=quick` again"
    with pytest.raises(BookError, match=rf"html/book/chapters/01_page\.html differs from the file the HTML build wrote .*{remedy}"):
        publishing.publish(own_page_book)
    page.write_text(built)
    (html / "book" / "extra.html").write_text("<p>added</p>")
    with pytest.raises(BookError, match=rf"html/book/extra\.html was added after the HTML build{remedy}"):
        publishing.publish(own_page_book)
    (html / "book" / "extra.html").unlink()
    (html / "book" / "rerun.html").unlink()
    with pytest.raises(BookError, match=rf"html/book/rerun\.html is missing \(the HTML build wrote it\){remedy}"):
        publishing.publish(own_page_book)
    page.write_text(built.replace("A line that rises.", "A line that falls."))
    publishing.build_html(own_page_book)  # the remedy the message gives: every page written afresh
    assert page.read_text() == built and (html / "book" / "rerun.html").is_file()
    assert publishing.publish(own_page_book) == html
