#!/usr/bin/env python3
"""Writes sample-data/events.ndjson: the demo world of Stepo, deterministically.

Run from anywhere: python3 sample-data/generate.py. The output is committed; this script is
how it was made and how to change it. Every example of the notification board lands in the
activity of the demo user, chaucao, surrounded by two weeks of ordinary life.
"""
import json
import os
import random
from datetime import datetime, timedelta, timezone

END = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
START = END - timedelta(days=14)
rng = random.Random(20261129)
events = []


def stamp(t):
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def emit(t, kind, **fields):
    assert START - timedelta(days=1) <= t <= END, (kind, t)
    events.append((t, len(events), dict(type=kind, at=stamp(t), **fields)))


def ago(days=0, hours=0, minutes=0):
    return END - timedelta(days=days, hours=hours, minutes=minutes)


def avatar(uid):
    return f"https://cdn.stepo.app/avatars/{uid}.jpg"


def photo(sid):
    return f"https://cdn.stepo.app/steps/{sid}-150.jpg"


# --- People -------------------------------------------------------------------------------
board = {  # the board's people, as they appear in its examples
    "chaucao": ("chaucao", "Chau Cao", False),
    "maya": ("maya.okonkwo", "Maya Okonkwo", False),
    "linh": ("linh.tran", "Linh Trần", False),
    "devin": ("devincole", "Devin Cole", False),
    "priya": ("priya.nair", "Priya Nair", False),
    "jules": ("jules.moreau", "Jules Moreau", False),
    "theo": ("theo.salas", "Theo Salas", False),
    "hana": ("hana.w", "Hana Watanabe", False),
    "ray": ("raydelgado", "Ray Delgado", True),
    "kofi": ("kofi.asante", "Kofi Asante", False),
    "an": ("an.nguyen", "An Nguyễn", False),
    "vy": ("vy.dang", "Vy Đặng", True),
    "lena": ("lena.ortiz", "Lena Ortiz", False),
    "marco": ("marco.ferri", "Marco Ferri", False),
}
others = [
    "Sofia Lindqvist", "Tomás Herrera", "Aiko Tanaka", "Noah Fischer", "Amara Diallo", "Mateo Rossi",
    "Isla MacLeod", "Yusuf Demir", "Elena Petrova", "Kwame Mensah", "Zoe Laurent", "Arjun Mehta",
    "Freya Nilsen", "Diego Alvarez", "Mina Park", "Oskar Berg", "Leila Haddad", "Ben Carter",
    "Chiara Bianchi", "Ravi Iyer", "Nadia Kowalski", "Sam Okafor", "Lucía Romero", "Hiro Sato",
    "Blake Turner", "Quinn Avery",
]
users = dict(board)
for name in others:
    uid = name.split()[0].lower().replace("á", "a").replace("í", "i")
    users[uid] = (name.lower().replace(" ", ".").replace("á", "a").replace("í", "i"), name, False)
# One name stored decomposed (NFD), so combining marks are exercised as well as precomposed ones.
users["mai"] = ("mai.nguyen", "Nguye\u0302\u0303n Thi\u0323 Mai", False)
background = [u for u in users if u not in board]

for i, (uid, (username, name, private)) in enumerate(users.items()):
    user = dict(id=uid, username=username, name=name, avatarUrl=avatar(uid))
    if private:
        user["private"] = True
    if uid in ("quinn", "hiro"):
        user["signedIn"] = False
    emit(START - timedelta(hours=20) + timedelta(minutes=i), "user", user=user)

# --- Who follows whom ---------------------------------------------------------------------
following = set()


def follow(t, actor, target):
    following.add((actor, target))
    emit(t, "follow", actor=actor, target=target)


def accept(t, private_user, requester):
    emit(t, "followRequestAccepted", actor=private_user, target=requester)


setup = START - timedelta(hours=2)
# chaucao's circle: the board people she follows, and background life around her.
for target in ["maya", "linh", "lena", "marco", "hana", "priya", "devin"] + background[:8]:
    follow(setup, "chaucao", target)
for fan in ["maya", "linh", "devin", "priya", "jules", "theo", "hana", "lena", "marco"] + background[:14]:
    follow(setup + timedelta(minutes=1), fan, "chaucao")
# Ray is private: chaucao asked and was let in long ago, so she can see his steps.
follow(setup + timedelta(minutes=2), "chaucao", "ray")
accept(setup + timedelta(minutes=3), "ray", "chaucao")
# The rest of the world follows at random.
for uid in users:
    if uid == "chaucao":
        continue
    for target in rng.sample([u for u in users if u != uid], 9):
        if (uid, target) in following or target in ("chaucao", "ray", "vy"):
            continue
        follow(setup + timedelta(minutes=4), uid, target)

# --- Journeys and steps -------------------------------------------------------------------
steps = {}  # sid -> dict(owner, journey, published, deleted)
comment_seq = [0]


def journey(t, jid, owner, title):
    emit(t, "journey", journey=dict(id=jid, owner=owner, title=title))


def step(t, sid, jid, owner, caption, final=False, processing=timedelta(minutes=6)):
    body = dict(id=sid, journey=jid, caption=caption, photoUrl=photo(sid))
    if final:
        body["final"] = True
    emit(t, "step", step=body)
    emit(t + processing, "mediaReady", step=sid)
    steps[sid] = dict(owner=owner, journey=jid, published=t + processing, deleted=None)


def comment(t, actor, sid, text, parent=None, cid=None):
    comment_seq[0] += 1
    cid = cid or f"c{comment_seq[0]:04d}"
    body = dict(id=cid, text=text)
    if parent:
        body["parent"] = parent
    emit(t, "comment", actor=actor, step=sid, comment=body)
    return cid


# chaucao's own journeys
journey(ago(days=13, hours=2), "ridge", "chaucao", "Run the ridge")
step(ago(days=13), "ridge-1", "ridge", "chaucao", "Sunrise loop, legs like jelly but the view was worth it.")
step(ago(days=9, hours=3), "ridge-2", "ridge", "chaucao", "Trail run before work…")
step(ago(hours=1, minutes=50), "ridge-3", "ridge", "chaucao", "Trail run before work — up the ridge and back.")
journey(ago(days=12), "freedive", "chaucao", "Learn to freedive")
step(ago(days=11, hours=20), "freedive-1", "freedive", "chaucao", "Pool day: static apnea, 2:10 on the clock.")
step(ago(days=6, hours=5), "freedive-2", "freedive", "chaucao", "First open-water session done.")
step(ago(days=2, hours=8), "freedive-3", "freedive", "chaucao", "Equalising at 12 m finally clicked.")

# The board's people and their journeys
journey(ago(days=13, hours=6), "guitar", "marco", "Learn to play guitar")
for i, (d, caption) in enumerate([(12, "Day one: a borrowed guitar and three chords."), (9, "G to C without looking."),
                                  (6, "Strumming patterns, slowly."), (3, "Played a whole song for my kid.")]):
    step(ago(days=d, hours=4), f"guitar-{i + 1}", "guitar", "marco", caption)
step(ago(minutes=12), "guitar-5", "guitar", "marco", "Played it start to finish at the open mic.", final=True)

journey(ago(days=10), "forty", "vy", "Learning guitar at forty")
step(ago(days=10, hours=-1), "forty-1", "forty", "vy", "Fingertips hurt. Worth it.")
step(ago(days=5), "forty-2", "forty", "vy", "Found a teacher who laughs at my jokes.")

journey(ago(hours=3), "sourdough", "lena", "Bake sourdough from scratch")
step(ago(hours=2, minutes=40), "sourdough-1", "sourdough", "lena", "Starter is bubbling. Named it Doughvid.")

journey(ago(days=12, hours=1), "swim", "hana", "Swim a mile")
step(ago(days=11, hours=22), "swim-1", "swim", "hana", "Week one: 200 m and a lot of breathing.")
step(ago(days=4, hours=2), "swim-2", "swim", "hana", "Half a mile without stopping, goggles fogged the whole way.")

journey(ago(days=13, hours=8), "routes", "ray", "Every trail in the county")
step(ago(days=8), "routes-1", "routes", "ray", "Cedar Creek loop, muddy and perfect.")
step(ago(days=1, hours=6), "routes-2", "routes", "ray", "Found a hidden waterfall off the north trail.")

journey(ago(days=11), "marathon", "maya", "First marathon")
for i, d in enumerate([10, 7, 4, 1]):
    step(ago(days=d, hours=9), f"marathon-{i + 1}", "marathon", "maya",
         ["Long run: 18 km.", "Tempo Tuesday.", "Taper week begins.", "Bib number collected!"][i])

# Background journeys
titles = ["Read 20 books this year", "Couch to 5K", "Learn Portuguese", "Paint every morning", "Climb V5",
          "Grow tomatoes on the balcony", "Cycle to work all winter", "Learn to juggle", "Write a short story",
          "Cook every cuisine A to Z", "Meditate 100 days", "Build a canoe"]
captions = ["Small steps today.", "Harder than it looked, but done.", "Progress photo, be kind.",
            "Rain did not stop me.", "Half way there!", "Back at it after a rough week.",
            "Tiny win: 10 minutes longer than yesterday.", "Shared the session with a friend.",
            "New personal best.", "Rest day, but I prepared for tomorrow."]
for i, title in enumerate(titles):
    owner = background[i % len(background)]
    jid = f"bg{i + 1}"
    journey(START + timedelta(hours=rng.randint(0, 30)), jid, owner, title)
    count = rng.randint(2, 5)
    for k in range(count):
        t = START + timedelta(hours=36 + k * rng.randint(40, 70) + rng.randint(0, 10))
        if t > END - timedelta(hours=4):
            break
        step(t, f"{jid}-{k + 1}", jid, owner, rng.choice(captions), final=(k == count - 1 and i % 4 == 0))

# Journey follows
emit(ago(days=7), "journeyFollow", actor="chaucao", journey="forty")
emit(ago(days=9), "journeyFollow", actor="chaucao", journey="bg2")
for uid in rng.sample(background, 10):
    emit(ago(days=12), "journeyFollow", actor=uid, journey="guitar")
for uid in rng.sample(background, 6):
    emit(ago(days=12), "journeyFollow", actor=uid, journey="ridge")

# --- The board's examples, in chaucao's activity ------------------------------------------
emit(ago(minutes=2), "heart", actor="maya", step="ridge-3")                       # Maya, just now
comment(ago(minutes=4), "kofi", "ridge-3", "that light on the ridge!")          # a second voice: one thread
comment(ago(minutes=1), "linh", "ridge-3", "so proud of this one")               # Linh, now
emit(ago(days=9, hours=1), "share", actor="devin", step="ridge-2")                # Devin, in the window
emit(ago(days=9), "share", actor="kofi", step="ridge-2")                          # a second share on the thread
emit(ago(days=3, hours=6), "heart", actor="priya", step="freedive-2")            # after the window
comment(ago(days=3, hours=2), "jules", "freedive-2", "this is the kind of consistency I aspire to")
emit(ago(days=2, hours=20), "share", actor="theo", step="freedive-2")
mine = comment(ago(days=4, hours=1), "chaucao", "swim-2", "my goggles fog too, any tips?")
comment(ago(days=3, hours=22), "hana", "swim-2", "same happened to me week one", parent=mine)
comment(ago(hours=5), "ray", "routes-2", "@chaucao you have to try this route")
follow(ago(days=2), "kofi", "chaucao")
emit(ago(days=1, hours=12), "privacy", user="chaucao", private=True)              # chaucao goes private
follow(ago(hours=7), "an", "chaucao")                                              # so An has to ask
follow(ago(days=1, hours=4), "chaucao", "vy")
accept(ago(days=1, hours=2), "vy", "chaucao")
step(ago(hours=9), "forty-3", "forty", "vy", "barre chords finally ring clean")
emit(ago(days=1), "tierCrossed", actor="priya", journey="freedive", tier="Die-Hard Fan")
emit(ago(minutes=8), "tierCrossed", actor="chaucao", journey="guitar", tier="Celebrator")
emit(ago(days=4, hours=3), "announcement", text="Share your journey with a link — new in Stepo",
     audience="everyone", link="https://stepo.app/new/journey-links")
emit(ago(days=1, hours=20), "announcement", text="Stepo is back after a short maintenance window.",
     audience="signedIn")

# A batch: seven people heart one step within half an hour, Jules last. The first heart is a
# row of its own with its push; each next person joins it, and the row becomes the board's
# "Jules and 6 others · Stepped with you by heart", its lock-screen card replaced silently.
emit(ago(days=2, hours=9), "user", user=dict(id="jules.r", username="jules", name="Jules", avatarUrl=avatar("jules.r")))
for minutes, fan in zip(range(30, 3, -4), ["maya", "linh", "devin", "priya", "theo", "kofi", "jules.r"]):
    emit(ago(days=2, hours=7, minutes=minutes), "heart", actor=fan, step="freedive-3")

# --- Quiet rules at work -----------------------------------------------------------------
# A block: Blake blocks chaucao; his heart on her step crosses nothing.
emit(ago(days=5), "block", actor="blake", target="chaucao")
emit(ago(hours=1, minutes=20), "heart", actor="blake", step="ridge-3")
# A banned account never pings.
emit(ago(days=3), "account", user="quinn", state="banned")
emit(ago(hours=1), "heart", actor="quinn", step="ridge-3")
# Re-hearts are re-pings: silent.
emit(ago(minutes=1), "heart", actor="maya", step="ridge-3")
# Someone turns journey pushes off: rows stay in Activity, pushes do not go out.
emit(ago(days=6), "preferences", user="sofia", journeys=False)
# Deleted content: a step with rows, then deleted; a comment, then deleted.
step(ago(days=7, hours=2), "ridge-x", "ridge", "chaucao", "Blurry summit selfie (deleting this later)")
emit(ago(days=7, hours=1), "heart", actor="hana", step="ridge-x")
comment(ago(days=7), "marco", "ridge-x", "the view though!")
emit(ago(days=6, hours=20), "delete", step="ridge-x")
oops = comment(ago(days=2, hours=1), "mateo", "freedive-3", "wrong thread, sorry")
emit(ago(days=2), "delete", comment=oops)

# --- Ordinary life: interactions on published steps ----------------------------------------
phrases = ["love this", "keep going!", "this made my morning", "so good", "you're on a roll",
           "how long did that take?", "inspiring", "same energy today", "wow", "proud of you"]
busy_examples = {"ridge-3", "freedive-2", "swim-2", "routes-2", "guitar-5", "sourdough-1", "forty-3", "ridge-x"}
for sid, info in list(steps.items()):
    if sid in busy_examples:
        continue
    candidates = [u for u in background if u not in ("quinn", "blake") and u != info["owner"]]
    for uid in rng.sample(candidates, rng.randint(3, 9)):
        offset = timedelta(minutes=rng.randint(3, 60 * 60))
        t = info["published"] + offset
        if t > END - timedelta(minutes=30):
            continue
        roll = rng.random()
        if roll < 0.55:
            emit(t, "heart", actor=uid, step=sid)
        elif roll < 0.75:
            emit(t, "share", actor=uid, step=sid)
        else:
            text = rng.choice(phrases)
            if rng.random() < 0.15:
                text = f"@{users[rng.choice(background)][0]} look at this, {text}"
            comment(t, uid, sid, text)

# --- Mutes: the trust budget's signal (`stepo stats`) --------------------------------------
# At the very end (so every earlier event keeps its id): people who just had a burst of pushes
# turn some of them off. Arjun had three journey pushes in a day; Diego turns every push off
# after two; Maya, after three stepped-with hearts, turns those off. Noah turns social off
# with no social push before it: a settings change, not a mute.
emit(END, "preferences", user="arjun", journeys=False)
emit(END, "preferences", user="diego", all=False)
emit(END, "preferences", user="maya", stepWith=False)
emit(END, "preferences", user="noah", social=False)

events.sort(key=lambda e: (e[0], e[1]))
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "events.ndjson")
with open(out, "w", encoding="utf-8") as f:
    for n, (_, _, event) in enumerate(events, 1):
        event = dict(id=f"ev{n:05d}", **event)
        f.write(json.dumps(event, ensure_ascii=False) + "\n")
print(f"wrote {len(events)} events to {out}")
