"""Reinforcement learning on the catalog envs: the training configuration and loop, demonstrations and behaviour cloning, the task curriculum, trained-model policies and the results table."""
