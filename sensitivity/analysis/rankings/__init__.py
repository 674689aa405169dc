"""Rankings of the parameters: which one matters, by fANOVA and PED-ANOVA over a study's trials, or by Sobol' and
Morris indices over a designed study, each with intervals and whether its ranking is settled."""
