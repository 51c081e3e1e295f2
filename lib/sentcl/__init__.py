"""sentcl: reproducing contrastive learning of sentence embeddings.

The library under the sentcl book: losses, augmentation, batch shufflers, evaluators,
data loaders and the training loop that the chapter notebooks import.
"""

__version__ = "0.1.0"
