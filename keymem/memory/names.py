"""Ids and the KeyName rows that find a key by its text: shared by key resolution and autokey.

A key is found by name through ``KeyName`` rows whose primary key is the namespace and the
normalised text (:func:`name_id`); a name whose literal form differs (punctuation) gets a second
row (:func:`add_literal_name`). Nothing here reads the mirror or the indexes.
"""

from __future__ import annotations

import uuid

from keymem.store.db import Tx
from keymem.text.tokenize import literal_key, normalize_text


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def name_id(namespace: str, norm: str) -> str:
    """Primary key of a KeyName row: unique per namespace and normalised text."""
    return f"{namespace}\x1f{norm}"



def literal_name_id(namespace: str, text: str) -> str | None:
    """The KeyName id of a key's literal form when it differs from its normalised text, else None."""
    form = literal_key(text)
    if form and form != normalize_text(text):
        return name_id(namespace, form)
    return None


def add_literal_name(tx: Tx, namespace: str, text: str, key_id: str) -> str | None:
    """Also register the key's literal form when it differs from its normalised text.

    Recall matches names by the query's word n-grams, which drop punctuation ("Dr. Smith"
    appears as "dr smith"); without this row such a name could never match literally.
    Returns the KeyName id of that form (the first key to claim it keeps it), or None.
    """
    nid = literal_name_id(namespace, text)
    if nid is not None:
        tx.run("key/name_literal", id=nid, key_id=key_id)
    return nid


def remove_literal_name(tx: Tx, namespace: str, text: str, key_id: str) -> None:
    form = literal_key(text)
    if form and form != normalize_text(text):
        tx.run("key/name_delete_if", id=name_id(namespace, form), key_id=key_id)
