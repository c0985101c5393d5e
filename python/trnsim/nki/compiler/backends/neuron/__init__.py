"""neuronxcc.nki.compiler.backends.neuron: see trnsim.nki.compiler.backends."""
