"""The ConfQuestions benchmark suite: configurations, runner, metrics, significance and report."""
