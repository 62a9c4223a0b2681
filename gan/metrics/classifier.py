"""The project's own MNIST classifier: logits and features that image metrics use instead of Inception.

An MLP (784 -> 1024 -> 512 -> 10, ReLU, dropout) trained on the 4,000 "train" digits of
`gan.data.sources.load_mnist_5k` with random shifts of up to 2 pixels; its accuracy on the 1,000 "held_out"
digits is measured once and stored with the weights. An MLP rather than a CNN because native MindSpore
convolutions are very slow on CPU; training logs the held-out accuracy it reached. Weights, shifts and batch order
come from the config's seed, so retraining in a fresh process reproduces the classifier bit for bit. Dropout is off
by default because MindSpore's CPU dropout kernel is not reproducible even with fixed seeds (measured: two processes,
two different masks); the shifts regularise enough (the held-out accuracy was the same with dropout 0.0 and 0.3).

Trained weights are cached in `$LRELU_CACHE_DIR/classifier/` (default `~/.cache/lrelu-gan/classifier/`),
one gan.models.checkpoint file per (CLASSIFIER_VERSION, config), written atomically under a file lock so that parallel
sweep jobs train it once. Inputs are 28x28 digits in [-1, 1] (white digit on black), as float32 (N, 28, 28).
"""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn

from gan.core.streams import Purpose, stream
from gan.data.sources import load_mnist_5k
from gan.models.checkpoint import load_checkpoint, save_checkpoint

logger = logging.getLogger("gan.metrics.classifier")

CLASSIFIER_VERSION = "mlp-v1"  # bump when the network, the data split or the input layout changes
NUM_CLASSES = 10
DIGIT_SIZE = 28
_PREDICT_BATCH = 1000


@dataclass(frozen=True)
class ClassifierConfig:
    """How the classifier is built and trained (the held-out accuracy it reaches is stored with the weights)."""

    hidden: tuple[int, ...] = (1024, 512)
    epochs: int = 80
    batch_size: int = 128
    lr: float = 1e-3
    dropout: float = 0.0
    max_shift: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"classifier hidden={self.hidden!r} must be a non-empty tuple of integers >= 1")
        for key in ("epochs", "batch_size"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"classifier {key}={value!r} must be an integer >= 1")
        if not self.lr > 0:
            raise ValueError(f"classifier lr={self.lr!r} must be > 0")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"classifier dropout={self.dropout!r} must be in [0, 1)")
        if isinstance(self.max_shift, bool) or not isinstance(self.max_shift, int) or not 0 <= self.max_shift < 14:
            raise ValueError(f"classifier max_shift={self.max_shift!r} must be an integer in [0, 14)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"classifier seed={self.seed!r} must be an integer >= 0")

    def key(self) -> str:
        """Short stable hash of the version and every field: the cache file name."""
        text = json.dumps({"version": CLASSIFIER_VERSION, **dataclasses.asdict(self)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


class DigitNet(nn.Cell):
    """MLP whose construct returns (logits (N, 10), features (N, hidden[-1])): features feed the Frechet distance."""

    def __init__(self, hidden: tuple[int, ...], dropout: float, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng([seed, Purpose.CLASSIFIER_INIT])
        widths = (DIGIT_SIZE * DIGIT_SIZE, *hidden)
        layers: list[nn.Cell] = []
        for fan_in, fan_out in zip(widths[:-1], widths[1:]):
            layers += [_dense(fan_in, fan_out, rng), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(p=dropout))
        self.body = nn.SequentialCell(layers)
        self.head = _dense(widths[-1], NUM_CLASSES, rng)

    def construct(self, x: ms.Tensor) -> tuple[ms.Tensor, ms.Tensor]:
        features = self.body(x.reshape(x.shape[0], -1))
        return self.head(features), features


def _dense(fan_in: int, fan_out: int, rng: np.random.Generator) -> nn.Dense:
    """A Dense layer with He-uniform weights drawn from `rng` (deterministic init without global seeds)."""
    bound = np.sqrt(6.0 / fan_in)
    weight = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
    return nn.Dense(fan_in, fan_out, weight_init=ms.Tensor(weight), bias_init="zeros")


@dataclass
class Classifier:
    """A trained DigitNet plus what metrics need: the training class prior and its held-out accuracy."""

    net: DigitNet
    class_prior: np.ndarray
    test_accuracy: float
    config: ClassifierConfig

    def predict(self, digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(logits, features) as float32 numpy for digits (N, 28, 28) in [-1, 1], in batches."""
        if digits.ndim != 3 or digits.shape[1:] != (DIGIT_SIZE, DIGIT_SIZE):
            raise ValueError(f"classifier input must be (N, 28, 28) digits, got shape {digits.shape}")
        self.net.set_train(False)
        logits, features = [], []
        for start in range(0, len(digits), _PREDICT_BATCH):
            batch = ms.Tensor(np.ascontiguousarray(digits[start:start + _PREDICT_BATCH], dtype=np.float32))
            out_logits, out_features = self.net(batch)
            logits.append(out_logits.asnumpy())
            features.append(out_features.asnumpy())
        return np.concatenate(logits), np.concatenate(features)

    def accuracy(self, digits: np.ndarray, labels: np.ndarray) -> float:
        """Fraction of digits whose top logit is their label."""
        return float(np.mean(self.predict(digits)[0].argmax(axis=1) == labels))


def to_unit_range(digits: np.ndarray) -> np.ndarray:
    """uint8 digits in [0, 255] -> float32 in [-1, 1] (the GAN's range)."""
    return digits.astype(np.float32) * np.float32(2 / 255) - np.float32(1)


def random_shift(digits: np.ndarray, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Each (28, 28) digit moved by an integer offset in [-max_shift, max_shift]^2, zero-filled."""
    if max_shift == 0:
        return digits
    n, h, w = digits.shape
    padded = np.pad(digits, ((0, 0), (max_shift, max_shift), (max_shift, max_shift)))
    offsets = rng.integers(0, 2 * max_shift + 1, size=(n, 2))
    out = np.empty_like(digits)
    for dy, dx in np.unique(offsets, axis=0):
        rows = np.flatnonzero((offsets[:, 0] == dy) & (offsets[:, 1] == dx))
        out[rows] = padded[rows, dy:dy + h, dx:dx + w]
    return out


def train_classifier(config: ClassifierConfig = ClassifierConfig()) -> Classifier:
    """Train on the "train" digits (Adam, cosine lr, shifts drawn from (seed, epoch)); report held-out accuracy."""
    train_x, train_y = load_mnist_5k("train")
    test_x, test_y = load_mnist_5k("held_out")
    net = DigitNet(config.hidden, config.dropout, config.seed)
    steps_per_epoch = len(train_x) // config.batch_size
    if steps_per_epoch == 0:
        raise ValueError(f"classifier batch_size={config.batch_size} exceeds the {len(train_x)} training digits")
    total = config.epochs * steps_per_epoch
    lr = nn.cosine_decay_lr(0.0, config.lr, total, steps_per_epoch, config.epochs)
    optimizer = nn.Adam(net.trainable_params(), learning_rate=lr)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def loss_of(x: ms.Tensor, y: ms.Tensor) -> ms.Tensor:
        return loss_fn(net(x)[0], y)

    grad_fn = ms.value_and_grad(loss_of, None, optimizer.parameters)

    @ms.jit
    def step(x: ms.Tensor, y: ms.Tensor) -> ms.Tensor:
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    start = time.perf_counter()
    train_labels = train_y.astype(np.int32)
    for epoch in range(config.epochs):
        net.set_train(True)
        rng = stream(config.seed, epoch, Purpose.CLASSIFIER_AUGMENT)
        order = rng.permutation(len(train_x))
        images = to_unit_range(random_shift(train_x[order], config.max_shift, rng))
        labels = train_labels[order]
        for b in range(steps_per_epoch):
            rows = slice(b * config.batch_size, (b + 1) * config.batch_size)
            loss = step(ms.Tensor(images[rows]), ms.Tensor(labels[rows]))
        logger.debug("classifier epoch %d/%d loss %.4f", epoch + 1, config.epochs, float(loss.asnumpy()))
    prior = np.bincount(train_y, minlength=NUM_CLASSES) / len(train_y)
    classifier = Classifier(net, prior, 0.0, config)
    classifier.test_accuracy = classifier.accuracy(to_unit_range(test_x), test_y)
    logger.info("classifier trained in %.0f s: held-out accuracy %.2f%% on %d digits",
                time.perf_counter() - start, 100 * classifier.test_accuracy, len(test_y))
    return classifier


def cache_dir() -> Path:
    """Where trained classifiers live: $LRELU_CACHE_DIR/classifier or ~/.cache/lrelu-gan/classifier."""
    root = os.environ.get("LRELU_CACHE_DIR")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "lrelu-gan") / "classifier"


def cache_path(config: ClassifierConfig = ClassifierConfig(), directory: str | Path | None = None) -> Path:
    """The cache file of `config` (version and config hash in the name)."""
    return Path(directory or cache_dir()) / f"{CLASSIFIER_VERSION}-{config.key()}.ckpt"


def save_classifier(classifier: Classifier, path: str | Path) -> None:
    """Write weights, class prior and metadata atomically (gan.models.checkpoint's format)."""
    arrays = {f"param/{p.name}": p.asnumpy() for p in classifier.net.get_parameters()}
    meta = {"version": CLASSIFIER_VERSION, "config": dataclasses.asdict(classifier.config),
            "test_accuracy": classifier.test_accuracy}
    save_checkpoint(path, {"class_prior": classifier.class_prior, **arrays}, meta)


def read_classifier(path: str | Path, config: ClassifierConfig) -> Classifier:
    """Load a saved classifier; a corrupt file or one of another version/config raises RuntimeError naming it."""
    arrays, meta = load_checkpoint(path)
    expected = {"version": CLASSIFIER_VERSION, "config": json.loads(json.dumps(dataclasses.asdict(config)))}
    found = {"version": meta.get("version"), "config": meta.get("config")}
    if found != expected:
        raise RuntimeError(f"classifier file {path} holds {found}, expected {expected}")
    params = {k.removeprefix("param/"): v for k, v in arrays.items() if k.startswith("param/")}
    net = DigitNet(config.hidden, config.dropout, config.seed)
    names = {p.name for p in net.get_parameters()}
    if set(params) != names or "class_prior" not in arrays:
        raise RuntimeError(f"classifier file {path} has arrays {sorted(arrays)}, expected class_prior and "
                           f"{sorted(names)}")
    ms.load_param_into_net(net, {k: ms.Parameter(ms.Tensor(v), name=k) for k, v in params.items()})
    return Classifier(net, arrays["class_prior"], float(meta["test_accuracy"]), config)


def load_classifier(train_if_missing: bool = True, config: ClassifierConfig = ClassifierConfig(),
                    directory: str | Path | None = None) -> Classifier:
    """The cached classifier for `config`, training and caching it on first use (one process at a time). A cache
    entry that cannot be read (truncated, corrupt, of another config) is trained again with one warning, as the
    kernel cache rebuilds a bad library, instead of failing every run until someone deletes it."""
    path = cache_path(config, directory)
    if path.exists():
        try:
            return read_classifier(path, config)
        except RuntimeError:  # CheckpointError included; retrained below, under the lock
            pass
    if not train_if_missing:
        raise FileNotFoundError(f"no usable trained classifier at {path}; run `python scripts/train_classifier.py`")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "w")
    except OSError as err:
        raise RuntimeError(f"the classifier cache {path.parent} is not writable ({err.strerror or err}), and the "
                           f"classifier must be trained and saved there: set LRELU_CACHE_DIR to a writable folder "
                           f"(now {os.environ.get('LRELU_CACHE_DIR')!r}) or fix the folder's permissions") from err
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sweep jobs: the first trains, the others wait and read
        if path.exists():
            try:
                return read_classifier(path, config)
            except RuntimeError as err:
                logger.warning("the cached MNIST classifier %s is unusable (%s); training it again", path, err)
        else:
            logger.info("training the MNIST classifier for image metrics (first use; cached at %s)", path)
        classifier = train_classifier(config)
        save_classifier(classifier, path)
        return classifier
