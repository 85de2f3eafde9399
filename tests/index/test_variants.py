"""Key forms (``index/variants.py``): the spellings agents give one thing link, look-alikes stay apart."""

from __future__ import annotations

import pytest

from keymem.index.variants import forms, is_form_of, lookups

SAME = [
    (("Terraform", "proper_noun"), ("Terraform Cloud", "proper_noun")),  # a longer form
    (("MySQL", "proper_noun"), ("MySQL 8", "proper_noun")),
    (("Buildkite", "proper_noun"), ("Buildkite pipelines", "concept")),
    (("equity plan", "concept"), ("Employee Equity Plan", "proper_noun")),  # a trailing run
    (("Rosalind", "name"), ("Rosalind Achterberg", "name")),  # a first name
    (("Okwuosa", "name"), ("Mr Okwuosa", "name")),  # a title
    (("RHEL 8", "proper_noun"), ("RHEL8", "proper_noun")),  # a space
    (("home lab", "concept"), ("homelab", "concept")),
    (("Pydantic v1", "proper_noun"), ("Pydantic 1.x", "proper_noun")),  # version spellings
    (("k8s", "proper_noun"), ("Kubernetes", "proper_noun")),  # a numeronym
    (("QBR", "concept"), ("quarterly business review", "concept")),  # an acronym
    (("SIPP", "concept"), ("self-invested personal pension", "concept")),
    (("children", "concept"), ("child", "concept")),  # an irregular plural
    (("Ryanair account", "concept"), ("Ryanair", "proper_noun")),
]
APART = [
    (("Java 11", "proper_noun"), ("Java 17", "proper_noun")),  # versions of one thing are different things
    (("RHEL 8", "proper_noun"), ("RHEL 9", "proper_noun")),
    (("Mark Chen", "name"), ("Mark Lee", "name")),  # a shared first name
    (("cloud", "concept"), ("Terraform Cloud", "proper_noun")),  # a common word ends many keys
    (("plan", "concept"), ("Employee Equity Plan", "proper_noun")),
    (("apple", "concept"), ("apple pie", "concept")),
    (("Go", "proper_noun"), ("Go CLI", "proper_noun")),  # too short to stand for anything
    (("Java", "proper_noun"), ("JavaScript", "proper_noun")),  # one word is not a run of another
]


@pytest.mark.parametrize("a, b", SAME)
def test_forms_of_one_thing_link_both_ways(a: tuple[str, str], b: tuple[str, str]) -> None:
    assert is_form_of(*a, *b) and is_form_of(*b, *a)
    assert set(lookups(*a)) & set(forms(*b)) and set(lookups(*b)) & set(forms(*a))  # the index finds them


@pytest.mark.parametrize("a, b", APART)
def test_keys_that_only_look_alike_stay_apart(a: tuple[str, str], b: tuple[str, str]) -> None:
    assert not is_form_of(*a, *b) and not is_form_of(*b, *a)
