"""Text -> text (query reformulation with any encoder-decoder): :mod:`.task` holds the registered
:class:`~hf_querygen.tasks.text2text.task.Text2TextTask`."""
