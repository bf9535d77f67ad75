"""The bundled JAX trainer: a Llama-style model sharded over a (data, fsdp, model) mesh, streaming a mixture."""
