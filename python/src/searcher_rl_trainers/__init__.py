"""The trainer side of searcher-rl: clients of `searcher-rl serve-env` for distributed trainers."""

__version__ = "0.1.0"
