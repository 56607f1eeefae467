#!/usr/bin/env python3
"""Labelled speech for measuring lip sync: English sentences spoken by espeak-ng, each phone with
its start and end.

espeak-ng's library reports every phoneme it speaks as an event carrying the sample it starts at
(`espeakINITIALIZE_PHONEME_EVENTS`); this script asks for those events while it synthesises, and
writes for every take a mono 16-bit WAV file (espeak-ng's 22,050 Hz) and a JSON file beside it:

    {"rate": 22050, "voice": "en-us", "speed": 175, "text": "...",
     "phones": [[start_s, end_s, "m"], ...]}

Phone names are espeak-ng's own mnemonics (`_` and `_:` are pauses, `p`, `b`, `m` the bilabials,
`aI` a diphthong; see espeak-ng's docs/phonemes.md); facewire::lipsync::labels sorts them into
classes. Needs libespeak-ng (Debian: `apt-get install espeak-ng`) and Python 3, nothing else.

    python3 benches/speech.py OUT_DIR [--voices en-us,en,en-us+f3] [--speeds 150,190]

Prints one line per take written; exits with status 2 (and says so) when libespeak-ng is absent.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import struct
import sys
import wave

# Sentences dense in the closures lip sync must show (p, b, m; f and v), with open vowels
# around them, and plain ones for balance.
SENTENCES = [
    "Bob bought a big map for Pam.",
    "My mom made me a pumpkin pie.",
    "Five brave men move above the valley.",
    "Please pass the bread and butter, Bobby.",
    "Peter Piper picked a peck of pickled peppers.",
    "A bad cat sat on the mat by the pump.",
    "The farmer's wife gave him a very fine vase.",
    "Hop up, pop, and bob about in the bath.",
    "Maybe Emma will buy my old bike.",
    "Far away, a lamb and a calf lay by the barn.",
]

# espeak_AUDIO_OUTPUT and init options (speak_lib.h).
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_PHONEME_EVENTS = 0x0001
EVENT_LIST_TERMINATED = 0
EVENT_PHONEME = 7
POS_CHARACTER = 1
CHARS_UTF8 = 1


class _EventId(ctypes.Union):
    _fields_ = [
        ("number", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("string", ctypes.c_char * 8),
    ]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


def load_espeak():
    """libespeak-ng, or None."""
    for name in ("libespeak-ng.so.1", ctypes.util.find_library("espeak-ng")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class Speaker:
    """One espeak-ng instance that speaks text into samples and phone events."""

    def __init__(self, lib):
        self.lib = lib
        self.samples = []
        self.events = []
        self._callback = _CALLBACK(self._on_audio)
        self.rate = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, None, INITIALIZE_PHONEME_EVENTS)
        if self.rate <= 0:
            raise RuntimeError("espeak_Initialize failed")
        lib.espeak_SetSynthCallback(self._callback)

    def _on_audio(self, wav, count, events):
        if wav and count > 0:
            self.samples.extend(wav[:count])
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:
            e = events[i]
            if e.type == EVENT_PHONEME:
                self.events.append((e.sample, e.id.string.decode("ascii", "replace")))
            i += 1
        return 0

    def speak(self, text, voice, speed, pitch=None):
        """(samples, [(start_sample, phone)]) of `text`."""
        self.samples, self.events = [], []
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise RuntimeError(f"espeak-ng has no voice {voice}")
        # espeakRATE = 1, espeakPITCH = 3 (speak_lib.h).
        self.lib.espeak_SetParameter(1, speed, 0)
        if pitch is not None:
            self.lib.espeak_SetParameter(3, pitch, 0)
        data = text.encode() + b"\0"
        self.lib.espeak_Synth(data, len(data), 0, POS_CHARACTER, 0, CHARS_UTF8, None, None)
        self.lib.espeak_Synchronize()
        return list(self.samples), list(self.events)


# Silence before and after each sentence, seconds: a take starts and ends quiet, as speech does.
PAD = 0.4


def phones_of(events, total, rate, pad):
    """[[start_s, end_s, phone]]: each phone lasts until the next one starts; the padding
    before and after reads as the pause `_`."""
    out = [[0.0, pad, "_"]]
    for i, (start, phone) in enumerate(events):
        end = events[i + 1][0] if i + 1 < len(events) else total
        if end > start:
            out.append([round(pad + start / rate, 5), round(pad + end / rate, 5), phone])
    out.append([round(pad + total / rate, 5), round(2 * pad + total / rate, 5), "_"])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder for the WAV and JSON files")
    p.add_argument("--voices", default="en-us,en,en-us+f3")
    p.add_argument("--speeds", default="150,190")
    p.add_argument("--sentences", type=int, default=len(SENTENCES))
    args = p.parse_args()
    lib = load_espeak()
    if lib is None:
        print("libespeak-ng is missing (apt-get install espeak-ng)", file=sys.stderr)
        return 2
    speaker = Speaker(lib)
    os.makedirs(args.out, exist_ok=True)
    for voice in args.voices.split(","):
        for speed in (int(s) for s in args.speeds.split(",")):
            for n, text in enumerate(SENTENCES[: args.sentences]):
                samples, events = speaker.speak(text, voice, speed)
                padding = [0] * int(PAD * speaker.rate)
                name = f"{voice.replace('+', '_')}-{speed}-{n:02}"
                with wave.open(os.path.join(args.out, name + ".wav"), "wb") as w:
                    w.setnchannels(1)
                    w.setsampwidth(2)
                    w.setframerate(speaker.rate)
                    padded = padding + samples + padding
                    w.writeframes(struct.pack(f"<{len(padded)}h", *padded))
                labels = {
                    "rate": speaker.rate,
                    "voice": voice,
                    "speed": speed,
                    "text": text,
                    "phones": phones_of(events, len(samples), speaker.rate, len(padding) / speaker.rate),
                }
                with open(os.path.join(args.out, name + ".json"), "w") as f:
                    json.dump(labels, f)
                seconds = (len(samples) + 2 * len(padding)) / speaker.rate
                print(f"{name}: {seconds:.2f} s, {len(labels['phones'])} phones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
