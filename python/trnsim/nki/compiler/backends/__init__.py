"""neuronxcc.nki.compiler.backends: the compiler's internals. trnsim has only
``backends.neuron.dimensions.nc`` (the launch-grid core axis, nl.nc)."""
