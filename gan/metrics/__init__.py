"""Sample-quality metrics: FID/KID/precision-recall with Inception-v3, the resize conventions, the classifier and 2D
mode metrics."""
