"""Networks and what is built from them: layers, DCGAN/MLP networks, the checkpoint format, rebuilding a generator,
export and int8."""
