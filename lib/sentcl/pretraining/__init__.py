"""sentcl-mini: the small BERT sentcl pretrains itself by masked-language modelling, so that the demo
profile fine-tunes an encoder that has not yet seen a sentence pair, as the papers' encoders had not.

:mod:`.corpus` gathers the non-test text of a data root; :mod:`.mlm` trains and exports the model;
:mod:`.card` writes its model card and checks the shipped files; :mod:`.cli` is ``sentcl pretrain``.
"""
