"""Privacy models (one module each) and the policy that applies them to a node's classes."""

from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.l_diversity import LDiversity
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.privacy.policy import Judgement, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.t_closeness import TCloseness

__all__ = [
    "ClassTable",
    "Judgement",
    "KAnonymity",
    "LDiversity",
    "PrivacyModel",
    "PrivacyPolicy",
    "TCloseness",
    "max_suppressed",
]
