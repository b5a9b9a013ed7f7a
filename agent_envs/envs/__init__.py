"""Environment families, one module each; ``agent_envs.registration`` registers them."""
