"""The local engine: a build's stages on this machine's processes, without Beam (``--engine local``)."""
