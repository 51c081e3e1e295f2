"""IFCL (Xiao, Li & Chen 2023): Eq. (I) and (T) against loop references, the hippocampus queue, the
combined objective and its ablations (w/o TL; SimCSE = sentence-transformers' MNRL on (x, x))."""

from __future__ import annotations

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMultipleNegativesRankingLoss

from sentcl.errors import ConfigError
from sentcl.losses import HippocampusQueue, IFCLLoss, queue_infonce_loss, twin_loss, twin_margins
from sentcl.models import tiny_model


def cos(a, b):
    dot = sum(a[k] * b[k] for k in range(len(a)))
    return dot / (torch.sqrt(sum(x * x for x in a)) * torch.sqrt(sum(x * x for x in b)))


def infonce_reference(h, hp, queue=None, weights=None, tau=0.05):
    """Eq. (I) with loops: −log e^{sim(h_i,h_i^+)/τ} / (Σ_j e^{sim(h_i,h_j^+)/τ} + Σ_m p_m e^{sim(h_i,H_m)/τ}), mean over i."""
    total = 0.0
    for i in range(len(h)):
        numerator = torch.exp(cos(h[i], hp[i]) / tau)
        denominator = sum(torch.exp(cos(h[i], hp[j]) / tau) for j in range(len(hp)))
        if queue is not None:
            denominator = denominator + sum(weights[m] * torch.exp(cos(h[i], queue[m]) / tau) for m in range(len(queue)))
        total = total - torch.log(numerator / denominator)
    return total / len(h)


def twin_reference(h, hi, hf, margins):
    """Eq. (T) with loops: |e^{sim(h_i,h_i^+)} − e^{sim(h_i,h_i^-)} − M_i|, mean over i."""
    return sum(torch.abs(torch.exp(cos(h[i], hi[i])) - torch.exp(cos(h[i], hf[i])) - margins[i]) for i in range(len(h))) / len(h)


def tensors(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes]


def value_and_grads(fn, leaves):
    value = fn()
    return value.detach(), [g.detach() for g in torch.autograd.grad(value, leaves)]


@pytest.mark.parametrize(("queued", "tau"), [(0, 0.05), (7, 0.05), (7, 0.5), (12, 1.0)])
def test_queue_infonce_matches_loop_reference_values_and_gradients(queued, tau):
    h, hp, q = tensors((5, 6), (5, 6), (max(queued, 1), 6), seed=queued)
    queue = q[:queued] if queued else None
    weights = torch.linspace(1.0, 0.3, queued, dtype=torch.float64) if queued else None
    leaves = [h, hp] + ([q] if queued else [])
    ours = value_and_grads(lambda: queue_infonce_loss(h, hp, queue, weights, temperature=tau), leaves)
    ref = value_and_grads(lambda: infonce_reference(h, hp, queue, weights, tau), leaves)
    torch.testing.assert_close(ours[0], ref[0], rtol=1e-10, atol=1e-12)
    for got, want in zip(ours[1], ref[1], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-10)


def test_queue_infonce_would_catch_wrong_sign_temperature_weighting_and_axis():
    h, hp, q = tensors((6, 8), (6, 8), (12, 8), seed=3)
    weights = torch.tensor([1.0] * 6 + [0.5] * 6, dtype=torch.float64)
    right = infonce_reference(h, hp, q, weights, 0.05)
    ours = queue_infonce_loss(h, hp, q, weights, temperature=0.05)
    torch.testing.assert_close(ours, right)
    wrong = {
        "sign": -queue_infonce_loss(h, hp, q, weights, temperature=0.05),
        "temperature": queue_infonce_loss(h, hp, q, weights, temperature=0.1),
        "uniform weights": queue_infonce_loss(h, hp, q, torch.ones(12, dtype=torch.float64), temperature=0.05),
        "no queue": queue_infonce_loss(h, hp, temperature=0.05),
        "axis": queue_infonce_loss(hp, h, q, weights, temperature=0.05),
        "reversed weights": queue_infonce_loss(h, hp, q, weights.flip(0), temperature=0.05),
    }
    for name, value in wrong.items():
        assert not torch.isclose(value, right, rtol=1e-4), name


def test_zero_weight_drops_a_queued_row_and_a_queue_only_adds_to_the_loss():
    h, hp, q = tensors((4, 5), (4, 5), (3, 5), seed=1)
    weights = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(
        queue_infonce_loss(h, hp, q, weights, temperature=0.05),
        queue_infonce_loss(h, hp, q[[0, 2]], weights[[0, 2]], temperature=0.05),
    )
    assert queue_infonce_loss(h, hp, q, torch.ones(3, dtype=torch.float64), temperature=0.05) > queue_infonce_loss(h, hp, temperature=0.05)


def test_twin_loss_matches_loop_reference_values_and_gradients():
    h, hi, hf = tensors((6, 4), (6, 4), (6, 4), seed=5)
    margins = torch.linspace(-0.2, 0.4, 6, dtype=torch.float64)
    ours = value_and_grads(lambda: twin_loss(h, hi, hf, margins), [h, hi, hf])
    ref = value_and_grads(lambda: twin_reference(h, hi, hf, margins), [h, hi, hf])
    torch.testing.assert_close(ours[0], ref[0], rtol=1e-10, atol=1e-12)
    for got, want in zip(ours[1], ref[1], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-10)
    # a wrong margin sign, swapped twins, a temperature inside the exponent or no |.| would differ
    right = ref[0]
    for name, value in {
        "margin sign": twin_loss(h, hi, hf, -margins),
        "swapped twins": twin_loss(h, hf, hi, margins),
        "temperature": (torch.exp(torch.cosine_similarity(h, hi) / 0.05) - torch.exp(torch.cosine_similarity(h, hf) / 0.05) - margins).abs().mean(),
        "no abs": (torch.exp(torch.cosine_similarity(h, hi)) - torch.exp(torch.cosine_similarity(h, hf)) - margins).mean(),
    }.items():
        assert not torch.isclose(value, right, rtol=1e-4), name


def test_twin_margins_are_the_embedding_margin_without_gradient():
    e, ei, ef = tensors((3, 4), (3, 4), (3, 4), seed=2)
    m = twin_margins(e, ei, ef)
    assert not m.requires_grad
    want = torch.stack([torch.exp(cos(e[i], ei[i])) - torch.exp(cos(e[i], ef[i])) for i in range(3)]).detach()
    torch.testing.assert_close(m, want)
    assert bool((twin_margins(e, e, ef) >= 0).all())  # identical texts: e^1 − e^{sim} ≥ 0
    with pytest.raises(ConfigError, match="without gradient"):
        twin_loss(e, ei, ef, torch.zeros(3, dtype=torch.float64, requires_grad=True))


def test_queue_order_weights_and_eviction():
    queue = HippocampusQueue(3, forgetting_decay=0.5)
    assert queue.contents() == (None, None) and len(queue) == 0
    batches = [torch.full((2, 4), float(b), requires_grad=True) for b in range(5)]
    for b in batches[:2]:
        queue.push(b * 1)
    rows, weights = queue.contents()
    assert rows[:, 0].tolist() == [1, 1, 0, 0]  # newest first
    assert weights.tolist() == [1.0, 1.0, 0.5, 0.5] and not rows.requires_grad
    for b in batches[2:]:
        queue.push(b * 1)
    rows, weights = queue.contents()
    assert len(queue) == 3 and rows[:, 0].tolist() == [4, 4, 3, 3, 2, 2]  # batches 0 and 1 evicted
    assert weights.tolist() == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    assert queue.nbytes() == 3 * 2 * 4 * 4
    empty = HippocampusQueue(0)
    empty.push(batches[0])
    assert len(empty) == 0 and empty.contents() == (None, None)


def test_queue_state_round_trips_through_state_dict_and_refuses_too_many_batches():
    queue = HippocampusQueue(2, forgetting_decay=0.9)
    for _ in range(3):
        queue.push(torch.randn(3, 4))
    state = queue.state_dict()
    other = HippocampusQueue(2, forgetting_decay=0.9)
    other.load_state_dict(state)
    for (a, wa), (b, wb) in [(queue.contents(), other.contents())]:
        torch.testing.assert_close(a, b)
        torch.testing.assert_close(wa, wb)
    small = HippocampusQueue(1)
    with pytest.raises(ConfigError, match="at most 1"):
        small.load_state_dict(state)


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0)


def features(model, texts):
    return model.preprocess(texts)


TEXTS = ["a cat sat on the mat", "dogs bark at night", "the sun is hot", "rain falls in spain"]
REPEATED = ["a a cat sat on the mat", "dogs bark bark at night", "the sun sun is hot", "rain falls in in spain"]


def test_simcse_setting_equals_sentence_transformers_mnrl_on_x_x_pairs_with_dropout(model):
    model.train()
    columns = [features(model, TEXTS), features(model, TEXTS)]
    ours_loss = IFCLLoss(model, temperature=0.05, queue_batches=0, twin_weight=0.0)
    theirs = STMultipleNegativesRankingLoss(model, scale=20.0)
    torch.manual_seed(7)
    ours = ours_loss(columns)
    torch.manual_seed(7)
    want = theirs(columns, None)
    torch.testing.assert_close(ours, want)
    torch.manual_seed(8)
    assert not torch.isclose(ours_loss(columns), want)  # other dropout masks: another value (so dropout is on)


def test_objective_is_the_sum_of_its_parts_and_fills_the_queue_only_in_training(model):
    model.train()
    loss = IFCLLoss(model, temperature=0.05, queue_batches=2, forgetting_decay=0.9, twin_weight=0.7)
    h, hi, hf = tensors((4, 8), (4, 8), (4, 8), seed=4)
    margins = torch.tensor([0.1, 0.2, 0.0, -0.1], dtype=torch.float64)
    first = loss.compute_loss_from_embeddings([h, hi, hf], margins=margins)
    want = (queue_infonce_loss(h, hi, temperature=0.05) + queue_infonce_loss(h, hf, temperature=0.05)
            + 0.7 * twin_loss(h, hi, hf, margins))
    torch.testing.assert_close(first, want)
    assert len(loss.queue) == 1
    torch.testing.assert_close(loss.queue.contents()[0], hi.detach())  # the identical twins are stored
    second = loss.compute_loss_from_embeddings([h, hi, hf], margins=margins)
    q, w = hi.detach(), torch.ones(4, dtype=torch.float64)
    want = (queue_infonce_loss(h, hi, q, w, temperature=0.05) + queue_infonce_loss(h, hf, q, w, temperature=0.05)
            + 0.7 * twin_loss(h, hi, hf, margins))
    torch.testing.assert_close(second, want)
    loss.eval()
    loss.compute_loss_from_embeddings([h, hi, hf], margins=margins)
    assert len(loss.queue) == 2  # evaluation mode leaves the queue alone
    without_tl = IFCLLoss(model, queue_batches=0, twin_weight=0.0)
    torch.testing.assert_close(without_tl.compute_loss_from_embeddings([h, hi, hf]),
                               queue_infonce_loss(h, hi, temperature=0.05) + queue_infonce_loss(h, hf, temperature=0.05))


def test_module_forward_computes_static_margins_from_the_input_word_embeddings(model):
    model.train()
    loss = IFCLLoss(model, queue_batches=1, twin_weight=1.0)
    cols = [features(model, TEXTS), features(model, TEXTS), features(model, REPEATED)]
    margins = loss.margins(cols)
    words = model[0].auto_model.get_input_embeddings()
    with torch.no_grad():
        static = []
        for f in cols:
            mask = f["attention_mask"].unsqueeze(-1).float()
            static.append((words(f["input_ids"]) * mask).sum(1) / mask.sum(1))
    torch.testing.assert_close(margins, twin_margins(*static))
    assert bool((margins > 0).all())  # the identical twin is closer than the word-repeated one
    value = loss(cols)
    value.backward()
    assert math.isfinite(float(value.detach())) and len(loss.queue) == 1
    encoder = IFCLLoss(model, margin_embeddings="encoder")
    m1, m2 = encoder.margins(cols), encoder.margins(cols)
    torch.testing.assert_close(m1, m2)  # evaluation mode: no dropout, deterministic
    assert model.training  # and the training mode is restored


def test_misuse_is_a_config_error(model):
    loss = IFCLLoss(model, twin_weight=1.0)
    h, hi = tensors((3, 4), (3, 4))
    with pytest.raises(ConfigError, match="fraternal"):
        loss.compute_loss_from_embeddings([h, hi])
    with pytest.raises(ConfigError, match="margins"):
        loss.compute_loss_from_embeddings([h, hi, hi])
    with pytest.raises(ConfigError, match="labels"):
        loss.compute_loss_from_embeddings([h, hi, hi], torch.zeros(3))
    with pytest.raises(ConfigError):
        IFCLLoss(model, temperature=0)
    with pytest.raises(ConfigError):
        IFCLLoss(model, forgetting_decay=1.5)
    with pytest.raises(ConfigError):
        IFCLLoss(model, margin_embeddings="hidden")
    with pytest.raises(ConfigError):
        HippocampusQueue(-1)
    with pytest.raises(ConfigError, match="non-negative"):
        queue_infonce_loss(h, hi, hi, -torch.ones(3, dtype=torch.float64), temperature=0.05)
    assert loss.get_config_dict() == {"temperature": 0.05, "queue_batches": 3, "forgetting_decay": 0.9,
                                      "twin_weight": 1.0, "margin_embeddings": "static"}


@pytest.mark.slow
def test_an_interrupted_run_resumes_with_the_same_queue_and_ends_as_an_uninterrupted_one(tmp_path):
    """In-process (the SIGKILL version: benchmarks/ifcl_resume_check.py, recorded): a run that dies right
    after a checkpoint, started again, restores the queue and ends with the same weights, losses and queue."""
    from sentcl.data import load, samples_root
    from sentcl.data.augmentation import fusion_twins
    from sentcl.training import Callback, Trainer, TrainingConfig

    class Crash(Callback):
        name = "crash"

        def __init__(self, at):
            self.at, self.queue_at_first_step = at, None

        def on_step_end(self, trainer):
            if self.queue_at_first_step is None:
                self.queue_at_first_step = len(trainer.loss.queue)
            if trainer.state.global_step == self.at:
                raise KeyboardInterrupt("simulated kill")

    data = fusion_twins(load("wiki1m", "train", samples_root()).texts[:96], seed=1)
    config = TrainingConfig(batch_size=16, epochs=1, learning_rate=1e-3, checkpoint_steps=2, seed=3, log_steps=1)

    def run(folder, crash_at=None):
        crash = Crash(crash_at)
        trainer = Trainer(tiny_model(0), lambda m: IFCLLoss(m, queue_batches=3, forgetting_decay=0.9), data, config,
                          callbacks=[crash], show_progress=False)
        return trainer, trainer.train(folder), crash

    reference, ref_result, _ = run(tmp_path / "reference")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "interrupted", crash_at=5)  # dies after step 5 of 6; the last checkpoint is step 4's
    resumed, result, crash = run(tmp_path / "interrupted")
    assert result.resumed_from_step == 4
    assert crash.queue_at_first_step == 3  # restored: a fresh queue would hold 1 batch after one step
    assert result.losses == ref_result.losses
    for (name, a), (_, b) in zip(reference.model.state_dict().items(), resumed.model.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
    ref_queue, got_queue = reference.loss.queue.contents(), resumed.loss.queue.contents()
    torch.testing.assert_close(ref_queue[0], got_queue[0], rtol=0, atol=0)
