"""The GRPO update with the episodes' shared opening computed once.

The tiny Llama of ``baselines.llm.models.tiny`` (built offline, loaded with
``from_pretrained``) with LoRA adapters and TRL's fused LM head: the shared
path must give TRL's whole-row log-probs and gradients, and run the opening
once.
"""

from __future__ import annotations

import functools
import os

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from llm_fixtures import load_left_padded as load  # noqa: E402
from llm_fixtures import scored_grpo_batch  # noqa: E402

from baselines.llm.models.lora import LoRASpec, apply_lora  # noqa: E402
from baselines.llm.training.shared_opening import (  # noqa: E402
    MIN_SHARED_TOKENS,
    SharedOpeningGRPOTrainer,
    shared_opening_logps,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")
#: The sampling temperature the log-probs are of (TRL's fused head and ours alike).
TEMPERATURE = 0.7
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def lora_model(path, layers=None):
    """The tiny model with TRL's fused head and LoRA adapters whose B is not zero."""
    from trl.trainer.utils import add_fused_lm_head

    model, _ = load(path)
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    torch.manual_seed(0)  # before apply_lora: peft draws A from the global stream
    model = apply_lora(model, LoRASpec(r=4, layers=layers))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.05)  # peft starts B at 0: no gradient reaches A
    return model


def trl_batch(opening, prompt_tails, completions, vocab, seed=0):
    """Return TRL's layout: left-padded prompts, then right-padded completions."""
    generator = torch.Generator().manual_seed(seed)
    prompts = [
        opening + torch.randint(3, vocab, (n,), generator=generator).tolist() for n in prompt_tails
    ]
    replies = [torch.randint(3, vocab, (n,), generator=generator).tolist() for n in completions]
    width, keep = max(map(len, prompts)), max(map(len, replies))
    ids, mask = [], []
    for prompt, reply in zip(prompts, replies, strict=True):
        pad, tail = width - len(prompt), keep - len(reply)
        ids.append([0] * pad + prompt + reply + [0] * tail)
        mask.append([0] * pad + [1] * (len(prompt) + len(reply)) + [0] * tail)
    return torch.tensor(ids), torch.tensor(mask), keep


def whole_rows(model, ids, mask, keep):
    """TRL's own computation (``_get_per_token_logps_and_entropies``, one chunk)."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-keep] = -100
    outputs = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return outputs.log_probs[:, -keep:], outputs.entropy[:, -keep:]


def gradients(model, logps, weight):
    model.zero_grad()
    (logps * weight).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}


def test_the_shared_opening_gives_trls_log_probs_entropies_and_gradients(tiny_llama_path):
    model = lora_model(tiny_llama_path)
    vocab = model.config.vocab_size
    opening = torch.randint(3, vocab, (40,), generator=torch.Generator().manual_seed(1)).tolist()
    # Prompts of 41, 43 and 46 tokens (left padding) and completions of 5, 9 and 2
    # (right padding); the completion mask also hides one token inside a reply.
    ids, mask, keep = trl_batch(opening, (1, 3, 6), (5, 9, 2), vocab)
    mask[1, -4] = 0
    completion_mask = mask[:, -keep:].float()
    weight = completion_mask * torch.linspace(-1, 1, keep)

    reference, reference_entropy = whole_rows(model, ids, mask, keep)
    expected = gradients(model, reference, weight)
    logps, entropies = shared_opening_logps(
        model, ids, mask, keep, compute_entropy=True, temperature=TEMPERATURE
    )
    got = gradients(model, logps, weight)

    assert logps.shape == reference.shape == (3, keep)
    assert torch.allclose(logps * completion_mask, reference * completion_mask, atol=1e-5)
    assert torch.allclose(
        entropies * completion_mask, reference_entropy * completion_mask, atol=1e-5
    )
    assert expected.keys() == got.keys() and len(got) > 0
    for name, grad in expected.items():
        assert grad.abs().max() > 0, name
        assert torch.allclose(got[name], grad, atol=1e-5, rtol=1e-4), name


def test_the_opening_runs_once_and_the_rows_run_only_their_rest(tiny_llama_path, monkeypatch):
    model = lora_model(tiny_llama_path)
    ids, mask, keep = trl_batch(
        list(range(3, 43)), (1, 3, 6, 6), (5, 9, 2, 4), model.config.vocab_size
    )
    shapes = []
    backbone = model.get_base_model().base_model
    forward = backbone.forward

    @functools.wraps(forward)  # keeps forward's signature, which names its cache argument
    def counting(**kw):
        shapes.append(tuple(kw["input_ids"].shape))
        return forward(**kw)

    monkeypatch.setattr(backbone, "forward", counting)
    shared_opening_logps(model, ids, mask, keep)
    # 40 shared tokens once; each row then runs its 1-6 prompt tokens after the
    # opening and its completion, padded to the longest rest (6 + 9).
    assert shapes == [(1, 40), (4, 6 + keep)]
    assert sum(rows * width for rows, width in shapes) < ids.numel() / 2


@pytest.mark.parametrize(
    "opening, tails, reason",
    [
        (list(range(3, 3 + MIN_SHARED_TOKENS - 1)), (2, 3), "too little shared"),
        (list(range(3, 43)), (2,), "one row"),
    ],
)
def test_a_batch_with_little_to_share_is_left_to_the_whole_row_forward(
    tiny_llama_path, opening, tails, reason
):
    model = lora_model(tiny_llama_path)
    ids, mask, keep = trl_batch(opening, tails, (3,) * len(tails), model.config.vocab_size)
    assert shared_opening_logps(model, ids, mask, keep) is None, reason


def test_a_prompt_that_is_not_left_padded_is_left_to_the_whole_row_forward(tiny_llama_path):
    model = lora_model(tiny_llama_path)
    ids, mask, keep = trl_batch(list(range(3, 43)), (1, 4), (3, 3), model.config.vocab_size)
    mask[0, 5] = 0  # a hole inside a prompt: not TRL's layout
    assert shared_opening_logps(model, ids, mask, keep) is None


def test_the_trainer_scores_real_episodes_as_trls_own_forward_does(tiny_llama_path, tmp_path):
    from trl import GRPOTrainer

    trainer, batch = scored_grpo_batch(SharedOpeningGRPOTrainer, tiny_llama_path, tmp_path)
    assert (batch["prompt_mask"] == 0).any()
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    keep = batch["completion_ids"].size(1)
    weight = batch["completion_mask"] * batch["tool_mask"]

    # One chunk holds both tasks, left-padded to each other, and shares their opening.
    assert shared_opening_logps(trainer.model, ids, mask, keep) is not None
    ours, ours_entropy, _ = trainer._get_per_token_logps_and_entropies(
        trainer.model, ids, mask, keep, compute_entropy=True
    )
    ours_grads = gradients(trainer.model, ours, weight)
    trls, trls_entropy, _ = GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, trainer.model, ids, mask, keep, compute_entropy=True
    )
    trls_grads = gradients(trainer.model, trls, weight)

    assert torch.allclose(ours * weight, trls * weight, atol=1e-5)
    assert torch.allclose(ours_entropy * weight, trls_entropy * weight, atol=1e-5)
    for name, grad in trls_grads.items():
        assert torch.allclose(ours_grads[name], grad, atol=1e-5, rtol=1e-4), name


def test_scoring_only_the_reply_tokens_gives_their_log_probs_and_the_losss_gradients(
    tiny_llama_path,
):
    """The env's tokens in a completion are masked from the loss: leaving them unscored is exact."""
    model = lora_model(tiny_llama_path)
    vocab = model.config.vocab_size
    opening = torch.randint(3, vocab, (40,), generator=torch.Generator().manual_seed(2)).tolist()
    ids, mask, keep = trl_batch(opening, (2, 5, 1), (8, 6, 9), vocab, seed=3)
    replies = torch.ones(3, keep, dtype=torch.long)
    replies[:, 2:5] = 0  # an env message between two replies
    loss_mask = mask[:, -keep:] * replies
    weight = loss_mask * torch.linspace(-1, 1, keep)

    reference, _ = whole_rows(model, ids, mask, keep)
    expected = gradients(model, reference, weight)
    logps, entropies = shared_opening_logps(
        model, ids, mask, keep, True, temperature=TEMPERATURE, score_mask=replies
    )
    got = gradients(model, logps, weight)

    assert torch.allclose(logps * loss_mask, reference * loss_mask, atol=1e-5)
    assert (logps[loss_mask == 0] == 0).all() and (entropies[loss_mask == 0] == 0).all()
    assert (reference[loss_mask == 0] != 0).any()  # TRL's head scored them
    for name, grad in expected.items():
        assert grad.abs().max() > 0, name
        assert torch.allclose(got[name], grad, atol=1e-5, rtol=1e-4), name


def test_lora_on_the_top_layer_only_trains_that_layer_with_the_whole_models_gradients(
    tiny_llama_path,
):
    model = lora_model(tiny_llama_path, layers=1)
    vocab = model.config.vocab_size
    ids, mask, keep = trl_batch(list(range(3, 43)), (1, 3, 6), (5, 9, 2), vocab)
    weight = mask[:, -keep:] * torch.linspace(-1, 1, keep)

    expected = gradients(model, whole_rows(model, ids, mask, keep)[0], weight)
    logps, _ = shared_opening_logps(model, ids, mask, keep, temperature=TEMPERATURE)
    got = gradients(model, logps, weight)

    top = model.config.num_hidden_layers - 1
    assert expected.keys() == got.keys() and len(got) == 4  # A and B of q_proj and v_proj
    assert all(f"layers.{top}." in name for name in got)
    for name, grad in expected.items():
        assert grad.abs().max() > 0, name
        assert torch.allclose(got[name], grad, atol=1e-5, rtol=1e-4), name


def test_the_trainers_loss_and_gradients_equal_trls_with_chunks_cut_to_their_own_width(
    tiny_llama_path, tmp_path, monkeypatch
):
    """The whole update path: ``_compute_loss`` with reply-only scoring and per-chunk widths."""
    from trl import GRPOTrainer

    trainer, batch = scored_grpo_batch(SharedOpeningGRPOTrainer, tiny_llama_path, tmp_path)
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop
    model = trainer.model
    lengths = batch["completion_mask"].sum(dim=1)
    assert (batch["tool_mask"] == 0).any()
    widths = []
    original = shared_opening_logps

    def spy(model, ids, mask, keep, *args, **kwargs):
        widths.append(keep)
        return original(model, ids, mask, keep, *args, **kwargs)

    monkeypatch.setattr("baselines.llm.training.shared_opening.shared_opening_logps", spy)
    losses, grads = [], []
    for trls_forward in (False, True):
        if trls_forward:  # TRL's loss on TRL's whole-row forward: the reference
            trls = functools.partial(GRPOTrainer._get_per_token_logps_and_entropies, trainer)
            monkeypatch.setattr(trainer, "_get_per_token_logps_and_entropies", trls)
        model.zero_grad()
        loss = trainer._compute_loss(model, batch)
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad})

    assert widths == [int(lengths.max())]  # ours scored once, TRL's forward never
    assert torch.allclose(losses[0], losses[1], atol=1e-6)
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 0
    for name, grad in grads[1].items():
        assert torch.allclose(grads[0][name], grad, atol=1e-5, rtol=1e-4), name

    # Chunks of two rows: each runs at its own longest completion.
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    keep = batch["completion_ids"].size(1)
    widths.clear()
    ours = SharedOpeningGRPOTrainer._get_per_token_logps_and_entropies(
        trainer, model, ids, mask, keep, batch_size=2
    )[0]
    trls = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, ids, mask, keep)[0]
    assert widths == [int(lengths[row : row + 2].max()) for row in range(0, 8, 2)]
    assert min(widths) < keep and ours.shape == trls.shape
    weight = batch["completion_mask"]
    assert torch.allclose(ours * weight, trls * weight, atol=1e-5)


@pytest.mark.parametrize(
    ("aux_loss", "extra"), [(True, {}), (False, {"pixel_values": "images"})], ids=["aux", "image"]
)
def test_images_or_an_aux_loss_go_to_trls_forward_with_every_argument(monkeypatch, aux_loss, extra):
    from trl import GRPOTrainer

    calls = []

    def trl_forward(self, *args, **kwargs):
        calls.append((args, kwargs))
        return "trl's"

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", trl_forward)
    trainer = object.__new__(SharedOpeningGRPOTrainer)  # the dispatch reads no trainer state
    model = torch.nn.Linear(1, 1)
    ids, mask = torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)
    got = trainer._get_per_token_logps_and_entropies(
        model, ids, mask, 2, 4, True, aux_loss, **extra
    )
    assert got == "trl's"
    assert calls == [((model, ids, mask, 2, 4, True, aux_loss), extra)]
