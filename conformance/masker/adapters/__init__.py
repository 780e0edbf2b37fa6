"""Adapters that put real maskers behind the masker protocol, one short module or script each.

Each adapter calls its masker the way the masker's own documentation shows and nothing more; the
packages they need are installed by ``tox -e maskers`` (pinned in tox.ini). No adapter may
print anything but protocol lines on standard output.
"""
