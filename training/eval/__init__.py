"""Evaluation: one episode loop (rollout), evaluation jobs and records (evaluate), reports and plots, the episode viewer."""
