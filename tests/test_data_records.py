"""Record operations keep what a record says about itself (sources, drops, sample data)."""

from sentcl.data import load, samples_root


def test_derived_records_stay_labelled_as_sample_data():
    snli = load("snli", "dev", samples_root())
    assert snli.sample
    entailment = snli.with_label("entailment")
    assert entailment.sample and len(entailment) == snli.label_counts()["entailment"]
    sts12 = load("sts12", "test", samples_root())
    first = sts12.subset_names[0]
    part = sts12.subset(first)
    assert part.sample and set(part.subsets) == {first} and len(part) == sts12.subsets.count(first)
