"""TRL GRPO against `searcher-rl serve-env`, through TRL's `environment_factory`.

TRL discovers the public methods of the environment class as tools and runs the multi-turn loop
itself (docs/source/openenv.md, "How environment_factory works"). Each tool renders the Searcher
action it stands for and steps the server with it as the raw assistant turn, over OpenEnv's
`GenericEnvClient` (dict actions and observations). The server parses, executes and scores the
turn exactly as for any other trainer; the reward arrives at `done`.

    searcher-rl serve-env --port 8000 --max-sessions 64        # >= generation_batch_size
    python3 integrations/trl/train_searcher_grpo.py --env-url ws://127.0.0.1:8000

With `serve-env --token T`, put the token in the URL as credentials (`GenericEnvClient` sends no
headers; its connection sends these as HTTP Basic, which serve-env takes):

    SEARCHER_ENV_URL="ws://searcher:$TOKEN@gpu-host-reachable-name:8000" python3 integrations/trl/train_searcher_grpo.py

Not run here (needs TRL, vLLM and a GPU); the frames it sends are the ones
integrations/openenv/episode_client.py sends in the test suite.
"""

import argparse
import os

import requests
from datasets import Dataset
from openenv.core.generic_client import GenericEnvClient
from trl import GRPOConfig, GRPOTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--env-url", default=os.environ.get("SEARCHER_ENV_URL", "ws://127.0.0.1:8000"))
parser.add_argument("--model", default="Qwen/Qwen3-1.7B")
parser.add_argument("--vllm-mode", default="colocate", choices=["colocate", "server"])
args = parser.parse_args()
ENV_URL = args.env_url


class SearcherEnv:
    def __init__(self):
        self.client = GenericEnvClient(base_url=ENV_URL).sync()
        self.reward = 0.0
        self.masked = False
        self.done = False

    def reset(self, **kwargs) -> str | None:
        self.reward, self.masked, self.done = 0.0, False, False
        result = self.client.reset(task=kwargs["task_id"])
        return result.observation["text"]

    def _step(self, text: str) -> str:
        if self.done:
            raise ValueError("The episode is over.")
        result = self.client.step({"text": text})
        if result.done:
            self.done = True
            meta = result.observation["metadata"]
            # A reward the server could not compute (judge/generator outage) carries no signal.
            self.masked = meta.get("reward_status") != "ok"
            self.reward = 0.0 if self.masked else float(result.reward)
            return "Search complete." if not result.observation["text"] else result.observation["text"]
        return result.observation["text"]

    def search(self, query: str) -> str:
        """
        Search the collection; the best page not yet shown comes back.

        Args:
            query: What to search for.

        Returns:
            The page found, between <information> tags.
        """
        return self._step(f"<search>{query}</search>")

    def crop(self, x1: int, y1: int, x2: int, y2: int) -> str:
        """
        Crop and enlarge a region of the most recent image (pixels of the image as shown).

        Args:
            x1: Left edge.
            y1: Top edge.
            x2: Right edge.
            y2: Bottom edge.

        Returns:
            The enlarged crop.
        """
        return self._step(f"<bbox>[{x1}, {y1}, {x2}, {y2}]</bbox>")

    def search_complete(self) -> str:
        """
        Declare that the collected pages are enough to answer the question; ends the episode.

        Returns:
            A confirmation.
        """
        return self._step("<search_complete>true</search_complete>")


def reward_func(environments, **kwargs) -> list[float]:
    return [env.reward for env in environments]


# requests turns credentials in the URL into HTTP Basic, as the WebSocket client does.
response = requests.get(ENV_URL.replace("ws", "http", 1) + "/tasks", params={"limit": 1000}, timeout=60)
response.raise_for_status()
tasks = response.json()["tasks"]
dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": t["question"]}] for t in tasks], "task_id": [t["id"] for t in tasks]})

trainer = GRPOTrainer(
    model=args.model,
    train_dataset=dataset,
    reward_funcs=reward_func,
    args=GRPOConfig(use_vllm=True, vllm_mode=args.vllm_mode, max_completion_length=4096, num_generations=8, log_completions=True),
    environment_factory=SearcherEnv,
)
trainer.train()
