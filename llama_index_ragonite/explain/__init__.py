"""Stage 6: explanations: counterfactual attribution and RAGE-style combination and permutation explanations."""
