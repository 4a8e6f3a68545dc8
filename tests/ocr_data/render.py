"""Render the OCR test images (tests/data/ocr/) and the app's sample (apps/ocr/samples/).

Run by hand from the repository root after changing this file, and commit what it writes:

    .venv/bin/python tests/ocr_data/render.py

The fonts are DejaVu from Debian's packages ``fonts-dejavu-core`` (Sans, Sans Mono
and Serif, regular and bold) and ``fonts-dejavu-extra`` (the condensed, oblique,
italic and extra-light faces), installed under /usr/share/fonts/truetype/dejavu
(``apt-get install fonts-dejavu-core fonts-dejavu-extra``). Only the images are
committed, never the fonts, so the tests do not need them.

Every image is a function of this file alone: random noise, jitter and JPEG
settings come from fixed seeds, so re-running it with the same Pillow and fonts
rewrites the same bytes. ``truth.json`` maps each file name to the text of every
box a reader should find in it, in reading order; text separated by a wide gap
(a receipt's price, a table's cells) is one entry per run of text, as a
detector boxes it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "ocr"
SAMPLES = ROOT / "apps" / "ocr" / "samples"
FONTS = Path("/usr/share/fonts/truetype/dejavu")

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)


def font(name: str, size: int) -> ImageFont.FreeTypeFont:
    """A DejaVu face (``"Sans"``, ``"Serif-Bold"``, ...) at ``size`` pixels per em."""
    path = FONTS / f"DejaVu{name}.ttf"
    if not path.exists():
        sys.exit(f"render: {path} is missing; apt-get install fonts-dejavu-core fonts-dejavu-extra")
    return ImageFont.truetype(str(path), size)


@dataclass
class Run:
    """One run of text: what a detector should box as a single line."""

    text: str
    x: float
    y: float
    face: ImageFont.FreeTypeFont
    fill: RGB
    anchor: str = "la"  # left, ascender; "ra" right-aligns at x, "ma" centres


@dataclass
class Page:
    """A canvas, the runs drawn on it, and what happens to it afterwards."""

    size: tuple[int, int]
    background: RGB = WHITE
    runs: list[Run] = field(default_factory=list)

    def text(
        self, text: str, x: float, y: float, face: ImageFont.FreeTypeFont,
        fill: RGB = BLACK, anchor: str = "la",
    ) -> None:  # fmt: skip
        self.runs.append(Run(text, x, y, face, fill, anchor))

    def draw(self) -> Image.Image:
        image = Image.new("RGB", self.size, self.background)
        pen = ImageDraw.Draw(image)
        for run in self.runs:
            pen.text((run.x, run.y), run.text, font=run.face, fill=run.fill, anchor=run.anchor)
        return image

    def truth(self) -> list[str]:
        # Reading order, as rapidocr sorts boxes: top to bottom, then left to right
        # among runs on one line.
        order = sorted(self.runs, key=lambda r: (round(r.y), self.left(r)))
        return [r.text for r in order]

    @staticmethod
    def left(run: Run) -> float:
        width = run.face.getlength(run.text)
        return {"l": run.x, "r": run.x - width, "m": run.x - width / 2}[run.anchor[0]]


def lines_page(
    lines: list[str], face: ImageFont.FreeTypeFont, *, margin: int = 16, leading: float = 1.5,
    fill: RGB = BLACK, background: RGB = WHITE, width: int | None = None,
) -> Page:  # fmt: skip
    """Left-aligned lines, the canvas just big enough unless ``width`` is given."""
    step = round(face.size * leading)
    text_width = int(max(face.getlength(line) for line in lines)) + 2 * margin
    height = 2 * margin + step * (len(lines) - 1) + int(face.size)
    page = Page((max(width or 0, text_width), height), background)
    for i, line in enumerate(lines):
        page.text(line, margin, margin + i * step, face, fill)
    return page


# Finishing touches, applied in order to the drawn RGB image.
Step = Callable[[Image.Image], Image.Image]


def noise(sigma: float, seed: int) -> Step:
    def apply(image: Image.Image) -> Image.Image:
        pixels = np.asarray(image, dtype=np.float32)
        pixels += np.random.default_rng(seed).normal(0.0, sigma, pixels.shape)
        return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8))

    return apply


def blur(radius: float) -> Step:
    return lambda image: image.filter(ImageFilter.GaussianBlur(radius))


def rotate(degrees: float, background: RGB = WHITE) -> Step:
    # Counter-clockwise for positive angles; the canvas keeps its size, so pages
    # that rotate leave room at their edges.
    return lambda image: image.rotate(
        degrees, resample=Image.Resampling.BICUBIC, fillcolor=background
    )


@dataclass
class Sample:
    """One file: the page, its finishing steps, and how it is stored."""

    name: str
    page: Page
    steps: list[Step] = field(default_factory=list)
    # PNG: "RGB", "L", "RGBA", "P" (16 colours picked by median cut) or "P-gray"
    # (256 grays, index = gray level); JPEG is always RGB. rapidocr 1.4.4 takes a
    # palette image's indices for gray levels (np.array of Pillow's "P" image),
    # so it reads "P-gray" files right and finds nothing in label_palette_dark.png.
    mode: str = "RGB"
    quality: int = 90
    subsampling: int = 2  # JPEG: 0 = 4:4:4, 2 = 4:2:0

    def image(self) -> Image.Image:
        image = self.page.draw()
        for step in self.steps:
            image = step(image)
        if self.mode == "L":
            return image.convert("L")
        if self.mode == "RGBA":
            return to_rgba(image, self.page.background)
        if self.mode == "P-gray":
            return image.convert("L").convert("P")
        if self.mode == "P":
            return image.quantize(16, Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        return image

    def save(self, folder: Path) -> Path:
        path = folder / self.name
        image = self.image()
        if path.suffix == ".jpg":
            image.save(path, quality=self.quality, subsampling=self.subsampling)
        else:
            image.save(path, optimize=True)
        return path


def to_rgba(image: Image.Image, background: RGB) -> Image.Image:
    """Dark text on a transparent background: alpha is how far each pixel is from it."""
    pixels = np.asarray(image, dtype=np.int16)
    distance = np.abs(pixels - np.array(background, dtype=np.int16)).max(axis=2)
    alpha = np.clip(distance * 2, 0, 255).astype(np.uint8)
    rgba = np.dstack([np.asarray(image), alpha])
    return Image.fromarray(rgba, "RGBA")


# The pages. Names say what each one exercises; sizes are the canvas sizes.


def line(
    name: str, text: str, face: ImageFont.FreeTypeFont, steps: list[Step] | None = None,
    *, margin: int = 16, fill: RGB = BLACK, background: RGB = WHITE, width: int | None = None,
    mode: str = "RGB", quality: int = 90, subsampling: int = 2,
) -> Sample:  # fmt: skip
    """A one-line image."""
    page = lines_page([text], face, margin=margin, fill=fill, background=background, width=width)
    return Sample(name, page, steps or [], mode, quality, subsampling)


def single_lines() -> list[Sample]:
    navy, yellow = (20, 40, 90), (255, 244, 170)
    return [
        line("line_sans24.png", "Invoice #2024-0117 due 15/03/2025", font("Sans", 24)),
        line("line_serif32_gray.png", "The quick brown fox jumps over the lazy dog.",
             font("Serif", 32), mode="L"),
        line("line_mono16.png", "ERROR 404: page /docs/v2.1 not found", font("SansMono", 16),
             margin=20),
        line("line_sans12_small.png", "Total: $1,234.56 (incl. 8% tax)", font("Sans", 12),
             margin=22, width=220),
        line("line_bold48.png", "SALE 50% OFF!", font("Sans-Bold", 48), margin=24),
        line("line_white_on_navy.png", "Meeting at 10:30 in Room B-12", font("Sans", 28),
             fill=WHITE, background=navy),
        line("line_red_on_yellow.jpg", "Warning: wet floor, use caution!", font("Serif-Bold", 26),
             fill=(190, 20, 20), background=yellow, quality=92, subsampling=0),
        line("line_low_contrast.png", "Version 3.8.1 released on 2025-06-30",
             font("SansCondensed", 22), fill=(110, 110, 110), background=(185, 185, 185)),
        line("line_oblique_blur.png", "Call us: +1 (555) 010-7788, ext. 42",
             font("Sans-Oblique", 26), [blur(1.2)]),
        line("line_italic_rot3.png", "Hello, world! Are you sure? Yes; it's fine.",
             font("Serif-Italic", 24), [rotate(3.0)], margin=30),
        line("line_wide_condensed.png",
             "Shipping address: 221B Baker Street, London NW1 6XE, United Kingdom",
             font("SerifCondensed", 20), margin=14),
        line("line_noise_q75.jpg", "Order 58213-A: 12 x widget @ 4.99 each",
             font("SansMono-Bold", 22), [noise(18.0, seed=1)], margin=20, quality=75),
        # Upside down: the direction classifier's "180" path turns it before recognition.
        line("line_upside_down.png", "Fragile: this side up (handle with care)",
             font("Sans-Bold", 30), [rotate(180.0)]),
    ]  # fmt: skip


def receipt_page(scale: float, items: list[tuple[str, str]], title: str, footer: str) -> Page:
    face = font("SansMono", round(18 * scale))
    bold = font("SansMono-Bold", round(24 * scale))
    width = round(420 * scale)
    step = round(30 * scale)
    height = round(40 * scale) + step * (len(items) + 6)
    page = Page((width, height))
    y = round(20 * scale)
    page.text(title, width / 2, y, bold, anchor="ma")
    y += round(step * 1.6)
    page.text("12/11/2025 14:07 Till 3", width / 2, y, face, anchor="ma")
    y += step * 2
    total = 0.0
    for name, price in items:
        page.text(name, round(24 * scale), y, face)
        page.text(price, width - round(24 * scale), y, face, anchor="ra")
        total += float(price)
        y += step
    y += step // 2
    page.text("TOTAL", round(24 * scale), y, bold)
    page.text(f"{total:.2f}", width - round(24 * scale), y, bold, anchor="ra")
    y += round(step * 1.6)
    page.text(footer, width / 2, y, face, anchor="ma")
    return page


def documents() -> list[Sample]:
    receipt = receipt_page(
        1.0,
        [("Espresso", "2.80"), ("Croissant", "3.20"), ("Orange juice", "4.50"), ("Bagel", "2.95")],
        "CORNER CAFE",
        "Thank you, see you soon!",
    )
    receipt_noisy = receipt_page(
        1.3,
        [("Milk 1L", "1.19"), ("Bread", "2.49"), ("Eggs x12", "3.89"), ("Apples 1kg", "2.75"),
         ("Coffee 500g", "7.99"), ("Butter", "2.15")],
        "FRESH MARKET",
        "VAT No. GB 123 4567 89",
    )  # fmt: skip
    paragraph = lines_page(
        [
            "Optical character recognition turns images of text",
            "into text a program can search, copy and index.",
            "This page has six lines set in a serif face, with",
            "digits (0123456789) and punctuation: commas, full",
            "stops; colons, quotes \"like this\" and (brackets).",
            "It was rendered for the tests on 22 November 2025.",
        ],
        font("Serif", 20),
        margin=24,
    )
    form = Page((760, 420))
    label, value = font("Sans-Bold", 22), font("Sans", 22)
    fields = [
        ("Name:", "Alice Martin"),
        ("Date of birth:", "12/07/1988"),
        ("Phone:", "+44 20 7946 0958"),
        ("Email:", "alice.martin@example.com"),
        ("Member ID:", "MX-40917"),
    ]
    form.text("MEMBERSHIP FORM", 380, 24, font("Serif-Bold", 30), anchor="ma")
    for i, (key, val) in enumerate(fields):
        form.text(key, 40, 100 + 60 * i, label)
        form.text(val, 300, 100 + 60 * i, value)
    table = Page((640, 260), (250, 250, 245))
    head, cell = font("SansCondensed-Bold", 20), font("SansCondensed", 20)
    rows = [("Item", "Qty", "Price"), ("Cable USB-C", "2", "9.98"), ("Charger 65W", "1", "34.00"),
            ("Mouse pad", "3", "14.85")]  # fmt: skip
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            x, anchor = ((40, "la"), (360, "la"), (600, "ra"))[c]
            table.text(text, x, 30 + 55 * r, head if r == 0 else cell, anchor=anchor)
    notice = Page((700, 360), (240, 248, 255))
    notice_lines = [
        ("NOTICE", font("Sans-Bold", 40)),
        ("The library will be closed", font("Sans", 24)),
        ("on Monday 3 March for repairs.", font("Sans", 24)),
        ("Books due that day may be", font("Sans", 24)),
        ("returned on Tuesday, no fine.", font("Sans", 24)),
        ("Questions? Ask at desk 2.", font("Sans-Oblique", 18)),
    ]
    y = 24
    for text, face in notice_lines:
        notice.text(text, 350, y, face, fill=(10, 30, 80), anchor="ma")
        y += round(face.size * 1.55)
    mixed = Page((820, 300))
    mixed.text("Quarterly Report Q3", 30, 24, font("Serif-Bold", 44))
    for i, line in enumerate([
        "Revenue grew 14.2% to $8.7M; costs fell 3%.",
        "Headcount: 212 (up from 198). Next review: 15 Jan.",
        "See appendix B, pages 12-19, for the full tables.",
    ]):  # fmt: skip
        mixed.text(line, 30, 110 + 34 * i, font("Sans", 18))
    mixed.text("Confidential - internal use only", 30, 240, font("Sans-ExtraLight", 14))
    big = big_document()
    rotated = lines_page(
        ["Deliveries arrive between 8:00 and 18:00.", "Sign the form and keep copy no. 2.",
         "Damaged boxes: call 0800 555 123."],
        font("Sans", 22), margin=40,
    )  # fmt: skip
    rotated_gray = lines_page(
        ["Room 4.12 - Lab access only", "Badge required after 19:00"],
        font("Serif", 26), margin=40,
    )  # fmt: skip
    return [
        Sample("receipt.png", receipt),
        Sample("receipt_noisy_q75.jpg", receipt_noisy, [noise(10.0, seed=2)], quality=75),
        Sample("paragraph_q90_444.jpg", paragraph, quality=90, subsampling=0),
        Sample("form.png", form),
        Sample("table_palette_gray.png", table, mode="P-gray"),
        Sample("notice_rgba.png", notice, mode="RGBA"),
        Sample("report_mixed_sizes.png", mixed),
        Sample("document_large_q95_444.jpg", big, quality=95, subsampling=0),
        Sample("lines_rot_minus4.jpg", rotated, [rotate(-4.0), noise(6.0, seed=3)], quality=88),
        Sample("lines_rot5_gray.png", rotated_gray, [rotate(5.0), blur(0.8)], mode="L"),
        Sample("paragraph_blur_noise.jpg",
               lines_page(["Keep this leaflet. You may need to read it again.",
                           "If you have any further questions, ask your doctor.",
                           "Take 2 tablets every 4-6 hours; max. 8 in 24 hours."],
                          font("SerifCondensed", 22), margin=20, fill=(30, 30, 30),
                          background=(235, 230, 220)),
               [blur(0.9), noise(12.0, seed=4)], quality=85, subsampling=2),
        Sample("label_palette_dark.png",
               lines_page(["BATCH 7731", "EXP 09/2027", "Store below 25 C"], font("Sans-Bold", 30),
                          fill=(240, 220, 60), background=(40, 40, 40), margin=20),
               mode="P"),
    ]  # fmt: skip


def big_document() -> Page:
    """A letter-sized page near the top of the size range (1280x900)."""
    page = Page((1280, 900), (252, 252, 250))
    page.text("Northwind Traders Ltd.", 60, 50, font("Serif-Bold", 40))
    page.text("14 Harbour Road, Portsmouth PO1 3AX", 60, 110, font("Serif", 20))
    body = [
        "Dear Mr. Okafor,",
        "",
        "Thank you for your order no. 10248 of 4 July 2025. We are pleased to confirm",
        "that all 36 items have been shipped today by courier (tracking: NW-88214-UK).",
        "The invoice total is GBP 1,452.60, payable within 30 days of receipt.",
        "",
        "Please check the contents against the enclosed list; report any damage",
        "within 7 days by phone (023 9211 4400) or at support@northwind.example.",
        "Returns are accepted until 31 August 2025 if goods are unused.",
        "",
        "Yours sincerely,",
        "Maria Anders, Sales Manager",
    ]
    face = font("Serif", 24)
    for i, line in enumerate(body):
        if line:
            page.text(line, 60, 200 + 44 * i, face)
    page.text("Page 1 of 1", 1220, 840, font("Sans", 16), fill=(90, 90, 90), anchor="ra")
    return page


def demo_receipt() -> Sample:
    page = receipt_page(
        1.2,
        [("Flat white", "3.40"), ("Blueberry muffin", "2.90"), ("Sparkling water", "1.80")],
        "THE DAILY GRIND",
        "Card payment - thank you!",
    )
    return Sample("receipt.png", page)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    SAMPLES.mkdir(parents=True, exist_ok=True)
    samples = single_lines() + documents()
    names = [s.name for s in samples]
    assert len(names) == len(set(names)), "two samples share a file name"
    truth = {}
    for sample in samples:
        path = sample.save(OUT)
        truth[sample.name] = sample.page.truth()
        with Image.open(path) as saved:
            print(f"{path.name:32} {saved.mode:5} {saved.width}x{saved.height} "
                  f"{path.stat().st_size:>8} bytes")  # fmt: skip
    (OUT / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
    demo = demo_receipt()
    path = demo.save(SAMPLES)
    print(f"{path}: {path.stat().st_size} bytes")
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{len(samples)} images, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
