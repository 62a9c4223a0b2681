"""The training loop and what it calls: the trainer, losses, tasks, evaluation, precision, runtime, distributed,
outputs."""
