"""The loss-module contract: batch extras (ids) and a real SentenceTransformer through forward."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMultipleNegativesRankingLoss
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer, models, pre_tokenizers
from torch import nn

from sentcl.errors import ConfigError
from sentcl.losses import MultipleNegativesRankingLoss, SentclLoss, SoftmaxLoss

TEXTS = {
    "anchor": ["a man plays a guitar", "the cat sleeps", "a dog runs in the park", "two kids eat pizza"],
    "positive": ["someone plays music", "a cat is resting", "an animal is outside", "children are eating"],
    "negative": ["nobody plays", "the cat runs", "a dog sleeps inside", "kids are sleeping"],
}


@pytest.fixture(scope="module")
def tiny_model():
    """A real SentenceTransformer (word-level tokenizer, 8-d static embeddings), no download."""
    words = sorted({w for column in TEXTS.values() for text in column for w in text.split()})
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    torch.manual_seed(0)
    return SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_dim=8)], device="cpu")


class IdLookupLoss(SentclLoss):
    """A loss that needs each row's id (as RCL does): here, a weighted sum of the anchors by id."""

    batch_extras = ("ids",)

    def compute_loss_from_embeddings(self, embeddings, labels=None, *, ids):
        return (embeddings[0].sum(dim=1) * ids).sum()

    def get_config_dict(self):
        return {}


class EmbeddingColumns(nn.Module):
    def forward(self, features):
        return {"sentence_embedding": features["sentence_embedding"]}


def test_batch_extras_reach_the_loss_and_are_checked():
    anchors = torch.arange(6.0).reshape(3, 2)
    loss = IdLookupLoss(EmbeddingColumns())
    features = [{"sentence_embedding": anchors}]
    ids = torch.tensor([10, 0, 1])
    assert loss(features, None, ids=ids).item() == 1 * 10 + 5 * 0 + 9 * 1
    with pytest.raises(ConfigError, match=r"takes the batch extras \['ids'\], got \[\]"):
        loss(features, None)
    with pytest.raises(ConfigError, match=r"got \['ids', 'weights'\]"):
        loss(features, None, ids=ids, weights=ids)


def test_mnrl_on_a_real_model_matches_sentence_transformers(tiny_model):
    features = [tiny_model.preprocess(TEXTS[column]) for column in ("anchor", "positive", "negative")]
    ours = MultipleNegativesRankingLoss(tiny_model)(features, None)
    theirs = STMultipleNegativesRankingLoss(tiny_model)(features, None)
    torch.testing.assert_close(ours, theirs)
    assert ours.requires_grad


def test_softmax_loss_trains_encoder_and_classifier(tiny_model):
    loss = SoftmaxLoss(tiny_model, num_labels=3)
    assert loss.classifier.in_features == 3 * 8
    features = [tiny_model.preprocess(TEXTS["anchor"]), tiny_model.preprocess(TEXTS["negative"])]
    labels = torch.tensor([2, 1, 2, 2])
    before = {name: p.detach().clone() for name, p in loss.named_parameters()}
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.5)  # the loss module holds the model and W_t
    first = loss(features, labels)
    first.backward()
    optimizer.step()
    changed = {name for name, p in loss.named_parameters() if not torch.equal(p.detach(), before[name])}
    assert {"classifier.weight", "classifier.bias"} <= changed
    assert any(name.startswith("model.") for name in changed)
    assert loss(features, labels).item() < first.item()


def test_every_loss_cites_its_paper_and_says_its_inputs():
    """Each loss module of sentcl.losses carries, as sentence-transformers' losses do, the BibTeX of its paper
    (``citation``) and an ``Inputs`` table of its text columns and labels in its docstring."""
    import inspect

    import sentcl.losses as losses

    found = [cls for _, cls in inspect.getmembers(losses, inspect.isclass)
             if issubclass(cls, SentclLoss) and cls is not SentclLoss]
    assert len(found) >= 8, [c.__name__ for c in found]
    for cls in found:
        assert cls.citation.startswith("@") and cls.citation.rstrip().endswith("}"), cls.__name__
        assert "title = " in cls.citation and "year = " in cls.citation, cls.__name__
        doc = inspect.getdoc(cls) or ""
        assert "Inputs:" in doc and "| Texts" in doc and "| Labels" in doc, cls.__name__
    assert MultipleNegativesRankingLoss.citation != SoftmaxLoss.citation  # each its own paper
