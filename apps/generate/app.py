"""generate: text generation with Gemma 3 270M through wasinn.

    generate PROMPT [options]        continue PROMPT; the new text streams to stdout
    generate --file PATH [options]   the prompt from a file (--file - : from stdin)
    generate --prompts FILE --json [options]
                                     each line of FILE a prompt as a JSON string; one
                                     JSON line each: token ids, text and timings

options:
    --max-tokens N        at most N new tokens (64)
    --temperature T       0 = greedy; higher = more varied (0.8)
    --top-k K             sample among the K most likely tokens, 0 = all (40)
    --top-p P             then among the fewest tokens whose probability reaches P (0.95)
    --repeat-penalty R    >= 1; lowers tokens already seen (1.0 = off)
    --seed S              the same seed gives the same text (default: a new one each run)
    --stop TEXT           stop before TEXT (may be given more than once)
    --precision fast|exact
                          fast (default): int8 weights; exact: the reference model's
                          f32 computation, token for token (slower)
    --stats               prompt and generated tokens, time to first token, tokens/s (stderr)
    --json                print one JSON object per prompt instead of streaming the text

The model is the base (pre-trained) Gemma 3 270M: it continues text, it does not
follow chat instructions. Prompt and new tokens together are limited to 4,096.
"""

from __future__ import annotations

import json
import sys

from generation import Generator
from sampling import Sampling
from wit_world import exports

from wasinn import print_line, run_command

_VALUED = ("--max-tokens", "--temperature", "--top-k", "--top-p", "--repeat-penalty", "--seed",
           "--stop", "--precision", "--file", "--prompts")  # fmt: skip


def _number(option: str, text: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{option} needs {what}, not {text!r}") from None


def parse(args: list[str]) -> tuple[str | None, dict[str, list[str]], set[str]]:
    """The positional prompt (or None), each option's values, and the flags given."""
    values: dict[str, list[str]] = {}
    prompt: str | None = None
    flags: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--stats", "--json"):
            flags.add(arg)
        elif arg in _VALUED:
            if i + 1 >= len(args):
                raise ValueError(f"{arg} needs a value")
            values.setdefault(arg, []).append(args[i + 1])
            i += 1
        elif arg.startswith("--") and arg != "--":
            raise ValueError(f"unknown option {arg} (see the usage: run without arguments)")
        elif prompt is None:
            prompt = arg
        else:
            raise ValueError("give the prompt as one argument (quote it), or use --file")
        i += 1
    for option, given in values.items():
        if option != "--stop" and len(given) > 1:
            raise ValueError(f"{option} is given {len(given)} times; give it once")
    return prompt, values, flags


def read_prompts(prompt: str | None, values: dict[str, list[str]]) -> list[str]:
    """The prompts: the argument, --file's text, or --prompts' JSON lines."""
    given = [prompt is not None, "--file" in values, "--prompts" in values]
    if sum(given) > 1:
        raise ValueError("give one of: a prompt, --file PATH, --prompts FILE")
    if "--file" in values:
        path = values["--file"][0]
        if path == "-":
            return [sys.stdin.read()]
        with open(path, encoding="utf-8") as f:
            return [f.read()]
    if "--prompts" in values:
        prompts = []
        with open(values["--prompts"][0], encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"--prompts line {number}: not JSON ({e.msg})") from None
                if not isinstance(text, str):
                    raise ValueError(
                        f"--prompts line {number}: a JSON string, not {type(text).__name__}"
                    )
                prompts.append(text)
        return prompts
    if prompt is None:
        raise ValueError("no prompt: give the text to continue, or --file PATH")
    return [prompt]


def main(args: list[str]) -> int:
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    prompt, values, flags = parse(args)
    prompts = read_prompts(prompt, values)

    def get(option: str, kind: type[int] | type[float], default: int | float) -> int | float:
        return _number(option, values[option][0], kind) if option in values else default

    sampling = Sampling(
        temperature=float(get("--temperature", float, 0.8)),
        top_k=int(get("--top-k", int, 40)),
        top_p=float(get("--top-p", float, 0.95)),
        repetition_penalty=float(get("--repeat-penalty", float, 1.0)),
        seed=int(get("--seed", int, 0)) if "--seed" in values else None,
    )
    max_tokens = int(get("--max-tokens", int, 64))
    precision = values.get("--precision", ["fast"])[0]
    stop = values.get("--stop", [])
    generator = Generator.load(precision)
    for text in prompts:
        # The budget is checked before the first step, so a refused request costs nothing.
        pieces = generator.stream(text, max_tokens, sampling, stop)
        if "--json" in flags:
            whole = "".join(pieces)
            stats = generator.stats
            print_line(json.dumps({
                "text": whole, "tokens": generator.generated,
                "prompt_tokens": stats.prompt_tokens, "finish_reason": stats.finish_reason,
                "first_token_s": stats.first_token_s, "total_s": stats.total_s,
            }))  # fmt: skip
        else:
            for piece in pieces:
                sys.stdout.write(piece)
                sys.stdout.flush()
            sys.stdout.write("\n")
            sys.stdout.flush()
        if "--stats" in flags:
            print(f"generate: {generator.stats}", file=sys.stderr)
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="generate")
