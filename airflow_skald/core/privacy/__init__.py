"""Privacy models (one module each) and the policy that applies them to a node's classes."""

from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.privacy.policy import Judgement, PrivacyPolicy, max_suppressed

__all__ = [
    "ClassTable",
    "Judgement",
    "KAnonymity",
    "PrivacyModel",
    "PrivacyPolicy",
    "max_suppressed",
]
