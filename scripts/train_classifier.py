"""Train (or load) the MNIST classifier used by the image metrics and report its held-out accuracy.

    python scripts/train_classifier.py                 # train once, cache, print accuracy
    python scripts/train_classifier.py --force --json classifier.json

The classifier is cached in $LRELU_CACHE_DIR/classifier (default ~/.cache/lrelu-gan/classifier); training
runs also happen automatically on the first metrics call, so this script mostly serves to pre-train and
to check the accuracy. Exits with status 1 when the held-out accuracy is below --min-accuracy.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path

from gan.metrics.classifier import ClassifierConfig, cache_path, load_classifier


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: cache location, retraining, the training recipe, the accuracy bar and a JSON report."""
    defaults = ClassifierConfig()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="folder for the classifier file (default: $LRELU_CACHE_DIR/classifier)")
    parser.add_argument("--force", action="store_true", help="retrain even if a cached classifier exists")
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--min-accuracy", type=float, default=0.97,
                        help="held-out accuracy below this fails the run (default 0.97)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report to this JSON file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Train or load, print the report, return 0 if the accuracy bar is met."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        config = ClassifierConfig(epochs=args.epochs, seed=args.seed)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    path = cache_path(config, args.cache_dir)
    if args.force:
        path.unlink(missing_ok=True)
    start = time.perf_counter()
    classifier = load_classifier(train_if_missing=True, config=config, directory=args.cache_dir)
    report = {"path": str(path), "held_out_accuracy": classifier.test_accuracy,
              "seconds": round(time.perf_counter() - start, 1), "config": dataclasses.asdict(config)}
    print(f"classifier: {path}\nheld-out accuracy: {100 * classifier.test_accuracy:.2f}% "
          f"(bar {100 * args.min_accuracy:.0f}%), {report['seconds']} s")
    if args.json:
        tmp = args.json.with_name(f".{args.json.name}.tmp")
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, args.json)  # atomic: readers never see a half-written report
    return 0 if classifier.test_accuracy >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
