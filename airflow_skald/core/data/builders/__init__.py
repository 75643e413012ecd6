"""Hierarchies built from rules (docs/design.md §3a): one module per builder (dates, masked codes,
intervals, ordered groups). Each parses and validates its rule at config load into a small
frozen rule object, and turns phase 1's domain into an ordinary `Hierarchy`."""

from airflow_skald.core.data.builders.dates import DateRule
from airflow_skald.core.data.builders.intervals import IntervalRule
from airflow_skald.core.data.builders.masked import MaskedRule
from airflow_skald.core.data.builders.ordered import OrderedRule

Rule = DateRule | MaskedRule | IntervalRule | OrderedRule

__all__ = ["DateRule", "IntervalRule", "MaskedRule", "OrderedRule", "Rule"]
