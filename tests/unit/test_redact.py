"""The user-info of a URL never leaves gpudash; the URL around it does."""

from __future__ import annotations

import pytest

from generator import redact

CASES = [  # (text, redacted)
    ("http://u:pw@h:9/x", "http://***@h:9/x"),
    ("https://user@grafana.example.com/", "https://***@grafana.example.com/"),
    ("http://u:p@ss:w@host/path?q=1", "http://***@host/path?q=1"),  # "@" and ":" inside the password
    ("http://u:pa/ss@host:9090", "http://***@host:9090"),  # an unescaped "/" inside it
    ("http://a%40b:p%2Fw@h/", "http://***@h/"),
    ("error: cannot query Prometheus at http://u:p@h:9 (ConnectionError)",
     "error: cannot query Prometheus at http://***@h:9 (ConnectionError)"),
    ('URL: "https://k:s@a/" and http://k2:s2@b:1/m', 'URL: "https://***@a/" and http://***@b:1/m'),
    ("postgres://u:p@db/x", "postgres://***@db/x"),
    ("http://h:9/x", "http://h:9/x"),
    ("mail a@b.example about http://h/", "mail a@b.example about http://h/"),
]


@pytest.mark.parametrize("text, redacted", CASES)
def test_user_info_is_redacted(text, redacted):
    assert redact.text(text) == redacted


def test_strip_gives_the_url_without_user_info_and_the_credentials():
    assert redact.strip("http://a%40b:p%2Fw@h:9/x?y=1") == ("http://h:9/x?y=1", ("a@b", "p/w"))
    assert redact.strip("http://[::1]:9/") == ("http://[::1]:9/", None)
    assert redact.strip("https://token@h/") == ("https://h/", ("token", ""))
