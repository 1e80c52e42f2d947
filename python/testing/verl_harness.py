"""Running `SearcherEnvAgentLoop` through verl's own classes without a GPU (a test helper, not part of
the package: python/tests_verl and integrations/verl/bench_loop.py put python/testing on their path).

- `build_tiny_chat_model`: a model folder verl's `HFModelConfig` loads (a byte-level BPE tokenizer
  with ChatML's `<|im_start|>`/`<|im_end|>` and template, and a tiny config; no weights: the agent
  loop worker reads only the tokenizer and the config).
- `compose_ppo_config`: verl's `ppo_trainer.yaml` composed by hydra, as `main_ppo` does.
- `ScriptedLLMServer`: a stand-in for verl's LLM server client (`generate(request_id, *,
  prompt_ids, sampling_params, image_data=None, ...) -> TokenOutput`) that answers scripted turns.
- `make_batch`: a `DataProto` as verl's trainer hands it to the agent loop workers.

The serve-env these run against is `serve_env.ServeEnv`, the launcher every Python-side test uses.
"""

import asyncio
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional, Union

from serve_env import ROOT

AGENT_LOOP_YAML = ROOT / "integrations" / "verl" / "agent_loop.yaml"
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def build_tiny_chat_model(folder: Union[str, Path], model_type: str = "qwen2") -> str:
    """A tokenizer with ChatML's special tokens and template, and a tiny `model_type` config."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoConfig, PreTrainedTokenizerFast

    folder = Path(folder)
    corpus = [
        "You are a search agent. Find the pages that answer the question. Question: What was the revenue?",
        "<think>look</think>\n<search>revenue 2002</search> <bbox>[1, 2, 3, 4]</bbox> <search_complete>true</search_complete>",
        "<information>[page x.png (640x360)] financial results Revenue 2009: 3.8 billion</information>",
    ] * 20
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=special[1:]
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(folder)
    sizes = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    architecture = "Qwen2ForCausalLM"
    if model_type == "gpt2":
        sizes, architecture = dict(n_embd=32, n_layer=1, n_head=2), "GPT2LMHeadModel"
    config = AutoConfig.for_model(
        model_type, vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        architectures=[architecture], **sizes
    )
    config.save_pretrained(folder)
    return str(folder)


def build_tiny_vision_model(folder: Union[str, Path]) -> str:
    """A vision-language folder verl loads with a processor: Mllama's (one of the processors verl 0.9.1's
    `hf_processor` accepts whose image side needs no torchvision), one `<|image|>` per image."""
    import transformers
    from tokenizers import AddedToken
    from transformers import AutoConfig, AutoTokenizer, MllamaProcessor

    folder = Path(build_tiny_chat_model(folder))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_special_tokens({"bos_token": "<|bos|>"})
    # Not a special token: verl decodes with skip_special_tokens before it re-runs the processor.
    tokenizer.add_tokens([AddedToken("<|image|>", special=False, normalized=False)])
    template = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}{% if message['content'] is string %}"
        "{{ message['content'] }}{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}<|image|>"
        "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{{ '<|im_end|>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    tokenizer.chat_template = template
    image_processor = getattr(transformers, "MllamaImageProcessorPil", transformers.MllamaImageProcessor)(
        size={"height": 28, "width": 28}, max_image_tiles=1
    )
    MllamaProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    AutoConfig.for_model(
        "mllama",
        text_config=dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, cross_attention_layers=[0]),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_global_layers=1, attention_heads=2,
                           image_size=28, patch_size=14, max_num_tiles=4, intermediate_layers_indices=[0], vision_output_dim=64),
        image_token_index=tokenizer.convert_tokens_to_ids("<|image|>"),
        architectures=["MllamaForConditionalGeneration"],
    ).save_pretrained(folder)
    return str(folder)


def compose_ppo_config(model_path: str, agent_loop_config_path: Union[str, Path] = AGENT_LOOP_YAML, overrides: tuple[str, ...] = ()) -> Any:
    """verl's `ppo_trainer` config with the model, the agent loop yaml and `overrides`."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_path}",
                "actor_rollout_ref.rollout.name=vllm",
                "actor_rollout_ref.rollout.calculate_log_probs=true",
                "data.max_prompt_length=1024",
                "data.max_response_length=1536",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config_path}",
                *overrides,
            ],
        )


Policy = Callable[[int, int, str], Union[str, tuple[str, float]]]


def question_of(prompt_text: str) -> str:
    found = re.findall(r"Question: (.*)", prompt_text)
    return found[-1].strip() if found else "revenue"


def search_then_complete(episode: int, turn: int, prompt_text: str) -> str:
    """Search the question, then `search_complete`: the golden page, a judged answer."""
    if turn == 0:
        return f"<think>look</think>\n<search>{question_of(prompt_text)}</search>"
    return "<think>enough</think>\n<search_complete>true</search_complete>"


class ScriptedLLMServer:
    """verl's `LLMServerClient.generate` interface with scripted turns.

    `policy(episode, turn, prompt_text)` gives the turn's text, or `(text, stall_s)` to wait first
    (a slow generation). Episodes are numbered in the order their request ids first arrive.
    """

    def __init__(self, tokenizer: Any, policy: Policy = search_then_complete):
        self.tokenizer = tokenizer
        self.policy = policy
        self.episodes: dict[str, int] = {}
        self.turns: dict[str, int] = {}
        self.calls: list[dict[str, Any]] = []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], image_data: Optional[list[Any]] = None, video_data: Any = None, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        episode = self.episodes.setdefault(request_id, len(self.episodes))
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        prompt_text = self.tokenizer.decode(prompt_ids)
        self.calls.append(dict(request_id=request_id, episode=episode, turn=turn, prompt_ids=list(prompt_ids), sampling_params=dict(sampling_params), images=[im.size for im in image_data or []]))
        answer = self.policy(episode, turn, prompt_text)
        text, stall_s = (answer, 0.0) if isinstance(answer, str) else answer
        if stall_s:
            await asyncio.sleep(stall_s)
        ids = self.tokenizer.encode(text, add_special_tokens=False)[: sampling_params.get("max_tokens", 1 << 30)]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def make_batch(task_ids: list[str], n: int, agent_name: str = "searcher_env", uids: Optional[list[str]] = None) -> Any:
    """A verl `DataProto` as the trainer hands it to the agent loop workers: each row repeated `n`
    times (interleaved), `agent_name`, `raw_prompt`, `extra_info.task_id`, `index`, `uid`."""
    import numpy as np
    from verl.protocol import DataProto

    uids = uids or [f"u{i}" for i in range(len(task_ids))]
    rows = [(i, task_id) for i, task_id in enumerate(task_ids) for _ in range(n)]
    return DataProto.from_dict(
        non_tensors={
            "agent_name": np.array([agent_name] * len(rows), dtype=object),
            "raw_prompt": np.array([[{"role": "user", "content": task_id}] for _, task_id in rows], dtype=object),
            "extra_info": np.array([{"task_id": task_id, "index": i} for i, task_id in rows], dtype=object),
            "index": np.array([i for i, _ in rows]),
            "uid": np.array([uids[i] for i, _ in rows], dtype=object),
        }
    )
