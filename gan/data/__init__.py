"""Training data: image sources (MNIST, Fashion-MNIST, folders, shapes), the loader, 2D point mixtures."""
