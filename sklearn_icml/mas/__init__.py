"""MAS-GPT: multi-agent systems as executable code, generated per query in one inference.

No torch needed: the generator is a text classifier over consistent (query, MAS) pairs, or
a prompt to any LLM callable; generated code runs in a confined child process whose
confinement this process verifies.
"""

from ._code_checks import ProgramCheck, check_program
from ._confinement import SandboxError, SandboxUnavailableError, UnsafeSandboxWarning
from ._executor import MASExecutor, MASResult
from ._llm import AgentLLM, ArithmeticMockLLM, OpenAICompatibleLLM
from ._pairs import ConsistentPairBuilder
from ._program import (
    MASProgram,
    default_answer_checker,
    default_mas_pool,
    extract_answer,
    extract_code,
    fallback_mas,
)
from ._router import MASGPTRouter
from ._solver import MASGPTSolver

__all__ = [
    "AgentLLM",
    "ArithmeticMockLLM",
    "ConsistentPairBuilder",
    "MASExecutor",
    "MASGPTRouter",
    "MASGPTSolver",
    "MASProgram",
    "MASResult",
    "OpenAICompatibleLLM",
    "ProgramCheck",
    "SandboxError",
    "SandboxUnavailableError",
    "UnsafeSandboxWarning",
    "check_program",
    "default_answer_checker",
    "default_mas_pool",
    "extract_answer",
    "extract_code",
    "fallback_mas",
]
