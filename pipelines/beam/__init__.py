"""The Beam engine: the runner, the stages and global phases as composite transforms."""
