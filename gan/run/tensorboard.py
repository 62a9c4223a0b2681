"""TensorBoard events of a run (tensorboardX) and the console progress bar showing the same numbers (tqdm)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from tensorboardX import SummaryWriter
from tqdm import tqdm


class TensorBoardWriter:
    """TensorBoard scalars/images under `run_dir/tensorboard`, plus a one-line progress bar with ETA on the console
    (`progress=False`: no bar, for a training loop of the user's own, gan.diagnostics.api)."""

    def __init__(self, run_dir: str | Path, total_steps: int | None, start_step: int, progress: bool = True) -> None:
        # A resumed run hides the events of the steps it redoes (logged after its checkpoint, before a crash).
        self.writer = SummaryWriter(logdir=str(Path(run_dir) / "tensorboard"),
                                    purge_step=start_step + 1 if start_step else None)
        self.bar = tqdm(total=total_steps, initial=start_step, unit="step", dynamic_ncols=True, disable=not progress)

    def scalars(self, step: int, values: dict[str, float]) -> None:
        """Log each value as a TensorBoard scalar at `step`."""
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)

    def image(self, tag: str, grid: np.ndarray, step: int) -> None:
        """Log an HWC uint8 grid as a TensorBoard image."""
        self.writer.add_image(tag, grid, step, dataformats="HWC")

    def progress(self, steps: int, postfix: dict[str, float]) -> None:
        """Advance the progress bar by `steps` and show the latest numbers."""
        self.bar.set_postfix({k: f"{v:.3g}" for k, v in postfix.items()}, refresh=False)
        self.bar.update(steps)

    def write(self, message: str) -> None:
        """Print a line without breaking the progress bar."""
        self.bar.write(message)

    def close(self) -> None:
        """Flush TensorBoard events and close the bar."""
        self.writer.close()
        self.bar.close()
