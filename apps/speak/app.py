"""speak: Japanese text to speech with Kokoro-82M, as a 24 kHz mono 16-bit WAV.

    speak TEXT... [-o OUT.wav] [--voice V] [--speed S]
    speak --text FILE [-o OUT.wav] ...   the text of FILE (UTF-8)
    speak [-o OUT.wav] ...               the text of stdin
    speak --phonemes FILE                each line of FILE as Kokoro's phonemes,
                                         one line each (no audio)

Options: -o OUT.wav (default speech.wav), --voice one of jf_alpha (default),
jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo; --speed from 0.5 to 2.0
(default 1.0); --stats prints one JSON line of timings after the WAV is written
(seconds: setup_s reading the dictionary, word list and voices, model_s loading
the model, first_audio_s and total_s from then on, audio_s of speech).
Long text is read sentence by sentence (cut after 。！？!? and line breaks) and
the audio written as each piece is made. A character without a reading (an
emoji, hangul) is named and nothing is written; any failure exits with status 1
(a component's exit status is 0 or 1).
The model and data are read from /models/speak and /models/openjtalk
(prepared by build.sh from PyPI and Debian).
"""

from __future__ import annotations

import json
import sys
import time

import speech
import wav_writer
from wit_world import exports

from wasinn import print_line, run_command

#: The most text read from a file or stdin (about 300,000 kana: hours of speech).
MAX_INPUT_BYTES = 1 << 20
OPTIONS = ("-o", "--voice", "--speed", "--text", "--phonemes")


class Usage(Exception):
    """Bad command-line arguments: the message and the usage go to stderr."""


def parse(args: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """Options with a value, the remaining words, and whether --stats was given."""
    options: dict[str, str] = {}
    words: list[str] = []
    stats = False
    rest = iter(args)
    for arg in rest:
        if arg in OPTIONS:
            value = next(rest, None)
            if value is None:
                raise Usage(f"{arg} needs a value")
            options[arg] = value
        elif arg == "--stats":
            stats = True
        elif arg.startswith("--") or (arg.startswith("-") and arg != "-"):
            raise Usage(f"unknown option {arg}")
        else:
            words.append(arg)
    return options, words, stats


def read_text(path: str) -> str:
    """A UTF-8 text file's (``-``: stdin's) text, up to MAX_INPUT_BYTES."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise ValueError(f"{path}: more than {MAX_INPUT_BYTES} bytes of text")
    return data.decode("utf-8")


def print_phonemes(speaker: speech.Speaker, path: str) -> int:
    """Each line's phonemes on a line of its own (an empty line, and the
    reason on stderr, for a line that cannot be read)."""
    failed = False
    for number, line in enumerate(read_text(path).splitlines(), 1):
        try:
            print_line(speaker.phonemize(line))
        except ValueError as exc:
            failed = True
            print(f"speak: {path}:{number}: {exc}", file=sys.stderr)
            print_line("")
    return 1 if failed else 0


def write_speech(
    speaker: speech.Speaker, text: str, out: str, voice: str, speed: float
) -> dict[str, float]:
    """Speak ``text`` into the WAV file ``out``, piece by piece; the timings
    (seconds of audio, and seconds until the first piece and in total)."""
    start = time.perf_counter()
    planned = speaker.plan(text)  # every reading error before the file is made
    first = None
    size = 0
    with open(out, "wb") as f:
        f.write(wav_writer.header(speech.SAMPLE_RATE, None))
        for audio in speaker.speak_chunks(planned, voice, speed):
            data = wav_writer.pcm16(audio)
            f.write(data)
            size += len(data)
            if first is None:
                first = time.perf_counter() - start
        for offset, value in wav_writer.sizes_at(size):
            f.seek(offset)
            f.write(value)
    seconds = size / 2 / speech.SAMPLE_RATE
    total = time.perf_counter() - start
    return {"audio_s": seconds, "first_audio_s": first or total, "total_s": total}


def main(args: list[str]) -> int:
    try:
        options, words, stats = parse(args)
        voice = speech.check_voice(options.get("--voice", speech.DEFAULT_VOICE))
        speed = speech.check_speed(float(options.get("--speed", "1.0")))
        if "--phonemes" in options and (words or "--text" in options):
            raise Usage("--phonemes takes a file and no text")
        if words and "--text" in options:
            raise Usage("give the text or --text FILE, not both")
    except (Usage, ValueError) as exc:
        print(f"speak: {exc}\n\n{__doc__.strip()}", file=sys.stderr)
        return 1
    started = time.perf_counter()
    try:
        speaker = speech.Speaker()
        setup = time.perf_counter() - started
        if "--phonemes" in options:
            return print_phonemes(speaker, options["--phonemes"])
        text = " ".join(words) if words else read_text(options.get("--text", "-"))
        out = options.get("-o", "speech.wav")
        speaker.model  # noqa: B018 - loaded here so that the timings below are the speech's
        model = time.perf_counter() - started - setup
        timings = write_speech(speaker, text, out, voice, speed)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"speak: {reason}", file=sys.stderr)
        return 1
    print(
        f"speak: wrote {out}: {timings['audio_s']:.2f} s of audio in {timings['total_s']:.2f} s",
        file=sys.stderr,
    )
    if stats:
        print_line(json.dumps({"setup_s": setup, "model_s": model, **timings}))
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="speak")
