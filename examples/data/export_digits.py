"""Exports scikit-learn's copy of the UCI handwritten digits (1 797 images of 8×8 pixels, values 0–16) once,
shuffled with a fixed seed, as a NumPy archive that the examples read with `io.readNpz`:

    digits.npz   "images": uint8 [1797, 8, 8] (values 0–16), "labels": uint8 [1797]
    digits.json  the counts and the train/test split (the first `train` images train, the rest test)

Run: /work/pyref/bin/python examples/data/export_digits.py
"""
import json
import os

import numpy as np
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))

digits = load_digits()
order = np.random.default_rng(0).permutation(len(digits.target))
images = digits.images[order].astype(np.uint8)
labels = digits.target[order].astype(np.uint8)
np.savez_compressed(os.path.join(HERE, "digits.npz"), images=images, labels=labels)
meta = {"count": int(len(order)), "height": 8, "width": 8, "maxValue": 16, "classes": 10,
        "train": 1437, "source": "sklearn.datasets.load_digits (UCI ML hand-written digits)"}
with open(os.path.join(HERE, "digits.json"), "w") as f:
    json.dump(meta, f, indent=2)
    f.write("\n")
print(meta)
