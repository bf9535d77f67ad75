"""Tokenization with Hugging Face ``tokenizers``: loading by path/URL, identity, BOS/EOS handling."""
