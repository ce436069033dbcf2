"""A labelled table of messages for the retrieval heuristics: should a search of the log run?

Labels are a person's judgement of need, not what the rules happen to do, so the
table measures the rules (the tests and `python -m benchmarks retrieval_quality`
report its false positives and negatives). `KNOWN` stands for the consolidations.
"""

from __future__ import annotations

from streams.search.retrieval import retrieval_decide

KNOWN = (
    "Gene prefers Python and works with the Eden Team on Kubernetes. He lives in Lisbon "
    "and drinks green tea."
)

CASES: list[tuple[str, bool]] = [
    # explicit recall phrases
    ("What did I tell you about my sister's wedding?", True),
    ("Do you remember the name of that restaurant?", True),
    ("remember when we planned the offsite?", True),
    ("Did I mention my allergy to peanuts?", True),
    ("As I said, the deadline moved.", True),
    ("We discussed this yesterday, the budget numbers.", True),
    ("You told me to try the blue theme, which one was it", True),
    ("Do you recall my flight number", True),
    ("Like I said before, I hate meetings on Mondays", True),
    ("Have I told you about my new job?", True),
    ("last time you suggested a book, what was it", True),
    ("Can you remind me what my password hint was?", True),
    ("I mentioned a podcast the other day", True),
    ("what did we decide about the logo?", True),
    ("you recommended a laptop earlier", True),
    # explicit requests to search memory
    ("Search your memory for my cat's name", True),
    ("Check your notes about my cat", True),
    ("Tell me what was decided", True),
    ("Can you look in your notes for the wifi password?", True),
    ("What was agreed with the landlord?", True),
    # questions about the past
    ("When did I move to Lisbon?", True),
    ("What was the name of my dog?", True),
    ("Where did we go for dinner last week?", True),
    ("Which hotel did I book for the conference?", True),
    ("How was my interview?", True),
    ("Who did I meet at the meetup?", True),
    ("What books have I read this year?", True),
    ("Why did the deployment fail on Friday?", True),
    ("What time was my dentist appointment?", True),
    ("How much did I spend on the trip?", True),
    ("what did my manager say about the raise", True),
    ("Where was I born again?", True),
    ("Which movie were we going to watch?", True),
    ("so what happened with the visa thing?", True),
    # names the consolidations do not hold
    ("Should I invite Marta and Jonas to the party?", True),
    ("Any news from Acme Corp about the contract?", True),
    ("I'm flying with Lufthansa to Berlin tomorrow.", True),
    ("Can you compare Svelte and Vue for me?", True),
    ("Tell Priya that Dev is out sick.", True),
    ("Book a table at Nobu in Kyoto.", True),
    ("New York or Los Angeles for a weekend?", True),
    # names the consolidations do hold, or only one new one
    ("Python or Kubernetes, which should I learn first?", False),
    ("Lisbon is lovely in spring.", False),
    ("The Eden Team ships on Fridays", False),
    ("Explain how TCP works.", False),
    ("Could you translate 'good night' into French?", False),
    ("Can you help me with Python and Django?", False),
    # chit-chat and tasks
    ("Hi there!", False),
    ("Thanks, that's helpful.", False),
    ("Can you write a haiku about autumn?", False),
    ("What's the weather like today?", False),
    ("How do I reverse a list in Python?", False),
    ("Good morning, how are you?", False),
    ("Please summarise this paragraph for me.", False),
    ("I need a recipe for pancakes, what do you suggest?", False),
    ("OK", False),
    ("Tell me a joke.", False),
    ("What is 17 times 23?", False),
    ("I'm tired today, keep it short.", False),
    ("Why is the sky blue?", False),
    ("Let's plan next week's tasks.", False),
    ("Remember to buy milk.", False),
    ("I watched a documentary, it was great.", False),
    ("Did you finish the summary?", False),
    ("What was that?", False),
    ("I said no to the offer, what do you think?", False),
    ("Check the weather for me.", False),
    ("Search the web for cheap flights.", False),
    ("Take a note: buy eggs.", False),
    ("Can you check my essay for typos?", False),
    ("Make notes of this meeting, please.", False),
    # other languages and their punctuation
    ("¿Te acuerdas de lo que te dije ayer?", True),
    ("¿Dónde está la estación?", False),
    ("¡Hola! ¿Qué tal, Ana?", False),
    ("«Bonjour», dit Marie à Paul.", True),
    ("Tu te souviens de mon adresse ?", True),
    ("東京の天気はどうですか？", False),
    ("先週話したレストランを覚えていますか？", True),
    ("Erinnerst du dich an meinen Termin?", True),
    ("Wie spät ist es?", False),
    ("你记得我的生日吗？", True),
    ("这个周末做什么？", False),
    ("¿Qué opinas de Madrid y Sevilla?", True),
    ("Bonjour ! Comment ça va ?", False),
    # phrasings the rules miss
    ("tell me again what my goals were", True),
    ("Any update on what my landlord said", True),
]


def confusion() -> dict[str, list[str]]:
    """The table's false positives and false negatives under `retrieval_decide`."""
    false_positives: list[str] = []
    false_negatives: list[str] = []
    for message, wanted in CASES:
        fired = retrieval_decide(message=message, known_text=KNOWN).triggered
        if fired and not wanted:
            false_positives.append(message)
        elif wanted and not fired:
            false_negatives.append(message)
    return {"false_positives": false_positives, "false_negatives": false_negatives}
