"""Former home of batch identification: the names are the engine's
(:mod:`robot_identification.identification`), re-exported so that scripts written against
``robot_identification.pipeline`` keep working. New code imports them from
:mod:`robot_identification.identification`."""
from robot_identification.identification import (  # noqa: F401 - re-exported
    IdentificationResult, identify, preprocess, resolve_presliding, resolve_settings)
