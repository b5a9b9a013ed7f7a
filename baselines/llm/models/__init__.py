"""Model files and weights: which model, loaded how, in which precision.

A model named, found on local disk (``resolve``) and its cache
(``model_cache``), the checks of an untrusted ``.gguf`` file
(``gguf_check``), loading for inference
(``hf_loading``), the compute dtype (``precision``), LoRA (``lora``), the
built-in tiny model (``tiny``) and the model a training run starts from
(``model_source``).

Of the other folders of ``baselines.llm`` it imports only
:mod:`baselines.llm.prompting` (the tiny model's tokenizer learns the env's
prompts and replies).
"""
