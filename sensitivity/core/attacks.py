"""The adversarial attacks by name, and PGD's step count: what the worker that runs them
(`trial/attacks.py`), the robustness protocol that chooses them and the report that describes them share."""

ATTACKS = ("fgsm", "pgd")
PGD_STEPS = 10  # PGD's steps, each of size 2.5 * eps / PGD_STEPS
