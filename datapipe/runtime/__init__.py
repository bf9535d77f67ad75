"""The stage runtime every engine runs: the stage contract and its commit protocol (``stage``), a shard's
statistics (``stats``), the removal lists (``decisions``), a removal's evidence (``evidence``), the progress files
(``heartbeat``), a child process a Ctrl-C reaches (``child``) and the typed ``stage.json`` (``record``).

Stages import it; it imports no stage, no orchestration and no engine (``pyproject.toml``'s layered contract).
"""
