"""Each chapter's central claims, its pre-registered primary family (issue 46, item 6;
:attr:`sentcl.book.chapter_spec.Chapter.central`): for every shipped profile, the keys are issue 46's
(M1-M3, B1-B3, R1-R6, I1-I5), every row a pair names is a row the chapter can produce in that profile (a row
of its paper's table, or one the notebook records from the profile's parameters), and each pair, compared on
its table, belongs to its own central claim (a claim goes to the first that covers it). In the smoke book
(slow), every primary claim carries one of the keys its chapter declared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from sentcl.book.output.claims import Central, Claim, paper_orderings, read_claims
from sentcl.book.output.results import paper_values
from sentcl.book.parameters import shipped_parameters
from sentcl.book.profiles import NAMES
from sentcl.chapters import CHAPTERS, bsc, ifcl, mnrl_sbert, rcl

KEYS = {"mnrl_sbert": ["M1", "M2", "M3"], "bsc": ["B1", "B2", "B3"], "rcl": ["R1", "R2", "R3", "R4", "R5", "R6"],
        "ifcl": ["I1", "I2", "I3", "I4", "I5"]}
"""Issue 46's central claims per chapter."""


def _untouched(models: Mapping[str, str], pooling: str) -> set[str]:
    return {f"{name.split('/')[-1]} untouched ({pooling} pooling)" for name in models.values()}


def own_rows(chapter: str, p: Mapping[str, Any]) -> dict[str, set[str]]:
    """The rows the chapter's notebook records with parameters ``p`` that are not the paper's, or that it records
    beyond the paper's tables: table (or "any") -> row names, as the notebook builds them."""
    if chapter == "mnrl_sbert":
        rows = {*p["mnrl_rows"], *p["softmax_rows"], *p["first_last_avg_rows"], *p["whitening_rows"]}
        return {"any": rows | _untouched(p["base_models"], p["pooling"])}
    if chapter == "bsc":
        zero_shot = (bsc.ZERO_SHOT if p["zero_shot_model"] == "princeton-nlp/sup-simcse-bert-base-uncased"
                     else f"{p['zero_shot_model'].split('/')[-1]} zero-shot (ours)")
        by_table: dict[str, set[str]] = {}
        for task in p["tasks"]:  # a task's rows are recorded under its table (the shuffle ablation on STSb too)
            by_table.setdefault(bsc.TABLES[task][0], set()).update(
                zero_shot if row == bsc.ZERO_SHOT else row for row in p["rows"][task])
        return by_table
    if chapter == "rcl":
        k = p["rcl_entropy_models"]
        final = {f.row for f in rcl.final_runs(p)}
        entropy = {f"Entropy model (phi = {phi:g})" for phi in p["phis"]}
        table4 = {rcl.regulators_row(p, n) for n in [*p["table4_entropy_models"], k] if n <= len(p["phis"])}
        ours = {"0 regulators, Eq. 1 fine-tuned (ours)", f"{2 * k} regulators from the untouched base (control, ours)"}
        anisotropy = {"SRoBERTa-base", rcl.EQ1_ROW, rcl.RCL_ROW, rcl.control_row(p), *entropy}
        return {"any": final | entropy | {"SRoBERTa-base"}, "Table 4": table4 | ours | {"0 regulators"},
                "Anisotropy (ours)": anisotropy, "our claims": {rcl.RCL_ROW, rcl.EQ1_ROW, rcl.control_row(p), "SRoBERTa-base"}}
    if chapter == "ifcl":
        english = {*p["english_rows"], *p["first_last_avg_rows"]} | _untouched(p["english_models"], p["pooling"])
        return {"any": english | set(p["chinese_rows"]) | set(p["mi_rows"])}
    raise AssertionError(chapter)


def paper_rows(chapter: str) -> dict[str, set[str]]:
    """Table -> the rows of the chapter's paper table (``data/papers/<chapter>.csv``)."""
    values = paper_values(chapter)
    return {table: set(part["row"]) for table, part in values.groupby("table", sort=False)}


def declared(chapter: str, profile: str) -> list[Central]:
    central = CHAPTERS[chapter].central
    assert central is not None, f"{chapter} declares no central claims"
    return list(central(shipped_parameters(chapter, profile)))


CASES = [(chapter, profile) for chapter in KEYS for profile in NAMES]


def test_every_chapter_that_reproduces_a_paper_declares_central_claims():
    assert {name for name, c in CHAPTERS.items() if c.central is not None} == set(KEYS)
    assert CHAPTERS["geometry"].central is None  # our own chapter: no paper, no pre-registered family
    assert set(NAMES) >= {"smoke", "demo", "rehearsal", "paper"}


@pytest.mark.parametrize(("chapter", "profile"), CASES)
def test_central_claims_have_the_issues_keys_and_one_to_three_pairs(chapter, profile):
    central = declared(chapter, profile)
    assert sorted(c.key for c in central) == KEYS[chapter]
    for c in central:
        assert c.words.strip() and 1 <= len(c.pairs) <= 3, c
        assert all(len(pair) == 2 and pair[0] != pair[1] for pair in c.pairs), c
        assert len({frozenset(pair) for pair in c.pairs}) == len(c.pairs), f"{c.key}: a pair twice"


@pytest.mark.parametrize(("chapter", "profile"), CASES)
def test_every_row_a_central_pair_names_is_one_the_chapter_produces(chapter, profile):
    p = shipped_parameters(chapter, profile)
    paper, ours = paper_rows(chapter), own_rows(chapter, p)
    anywhere = set().union(*paper.values(), *ours.values())
    for c in declared(chapter, profile):
        if c.table is not None:  # the table is one the chapter records: its paper's, or one of ours
            assert c.table in paper or c.table in ours, f"{c.key}: no table {c.table!r} in {chapter}"
        for row in {row for pair in c.pairs for row in pair}:
            assert row in anywhere, f"{chapter} {profile} {c.key}: {row!r} is neither a paper row nor one the notebook records"
            if c.table is not None:  # ... and a row of that table: the paper's, or one the notebook records there
                assert row in paper.get(c.table, set()) | ours.get(c.table, set()), (
                    f"{chapter} {profile} {c.key}: {row!r} is not a row of {c.table}")


@pytest.mark.parametrize(("chapter", "profile"), CASES)
def test_each_central_pair_compared_on_its_table_is_its_own_claim(chapter, profile):
    """A claim goes to the first central claim that covers it: none may take another's pair on its table
    (a claim restricted to a table comes before one that covers the same pair anywhere)."""
    central = declared(chapter, profile)
    for c in central:
        for left, right in c.pairs:
            for claim in (Claim(c.table or "a table of its own", "Average", left, right),
                          Claim(c.table or "a table of its own", "Average", right, left)):
                assert next(d.key for d in central if d.covers(claim)) == c.key, (chapter, profile, c.key, claim)


OURS = {("rcl", "R3"): {frozenset((rcl.RCL_ROW, rcl.EQ1_ROW))}, ("rcl", "R6"): "all", ("ifcl", "I2"): "all"}
"""The central pairs that rest on our own claims (or on none: RCL's anisotropy), not on the paper's orderings."""


@pytest.mark.parametrize("chapter", list(KEYS))
def test_the_central_pairs_are_the_papers_orderings(chapter):
    """In the paper profile each central pair is an ordering the paper reports (between two rows of the table
    the claim names, or of any table) but those that rest on our own claims (:data:`OURS`)."""
    values = paper_values(chapter).rename(columns={"value": "paper_value"})
    ordered = paper_orderings(values, set(zip(values["table"], values["row"], strict=True)))
    for c in declared(chapter, "paper"):
        ours = OURS.get((chapter, c.key), set())
        for pair in c.pairs:
            if ours == "all" or frozenset(pair) in ours:
                continue
            assert any(c.covers(claim) and frozenset((claim.left, claim.right)) == frozenset(pair) for claim in ordered), (
                f"{chapter} {c.key}: the paper reports no ordering of {pair} on {c.table or 'any table'}")


def test_the_central_rows_follow_the_profiles_parameters():
    """Rows built from parameters: RCL's dropout rates and regulator counts, MNRL's rows per family."""
    p = dict(shipped_parameters("rcl", "paper"))
    p.update(attention_dropout_ps=[0.2], drophead_ps=[0.3])
    pairs = {c.key: c.pairs for c in rcl.central_claims(p)}
    assert pairs["R2"] == (("RCL", "Attention dropout (p=0.2)"), ("RCL", "DropHead (p=0.3)"))
    assert pairs["R3"][0] == ("8 regulators (phi = 0.01, 0.02, 0.03, 0.04)", "2 regulators (phi = 0.01)")
    demo = {c.key: c.pairs for c in rcl.central_claims(shipped_parameters("rcl", "demo"))}
    assert demo["R3"][0] == ("4 regulators (phi = 0.01, 0.02)", "2 regulators (phi = 0.01)")
    m = dict(shipped_parameters("mnrl_sbert", "paper"))
    m["mnrl_rows"] = {"MNRL-BERT": "BERT", "MNRLSRoBERTa": "RoBERTa"}
    assert {c.key: c.pairs for c in mnrl_sbert.central_claims(m)}["M1"] == (("MNRL-BERT", "SBERT"),)
    i = dict(shipped_parameters("ifcl", "paper"))
    i["english_rows"] = {**i["english_rows"], "IFCL-BERT-base (ours)": ["base", "ifcl"]}
    i["english_rows"].pop("IFCL-BERT-base")
    assert {c.key: c.pairs for c in ifcl.central_claims(i)}["I2"] == (("IFCL-BERT-base (ours)", "IFCL-BERT-base w/o TL"),)


@pytest.mark.parametrize("chapter", list(KEYS))
def test_the_smoke_books_primary_claims_are_the_declared_central_claims(chapter, smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    claims = read_claims(out, chapter)
    assert len(claims), f"no claims for {chapter}"
    central = {c.key: c for c in declared(chapter, "smoke")}
    primary = claims[claims["family"] == "primary"]
    assert len(primary), f"{chapter}: no primary claim in the smoke book"
    assert set(primary["central"]) <= set(central), chapter
    for claim in primary.to_dict("records"):
        c = central[claim["central"]]
        assert frozenset((claim["left"], claim["right"])) in {frozenset(pair) for pair in c.pairs}, claim
        assert c.table is None or claim["table"] == c.table, claim
    secondary = claims[claims["family"] == "secondary"]
    assert secondary["central"].isna().all() and set(claims["family"]) <= {"primary", "secondary"}
    for family, part in claims.groupby("family"):  # Holm's m: the claims the plan tests, decided or not
        assert set(part["family_m"]) == {int(part["counted"].astype(bool).sum())}, (chapter, family)
        outside = part[~part["counted"].astype(bool)]
        assert (outside["verdict"] == "not tested").all(), outside
        assert outside["reason"].str.contains("not run|ceiling|no per-item scores to resample|not a claim of this build|"
                                              "neither ordering|fold", regex=True).all(), outside["reason"].tolist()
