"""Bundled demo sentences for the sense explorer: ambiguous words, each sentence labelled with its sense.

Written for this project (no third-party text). The first two "play" sentences are the ELMo paper's
nearest-neighbour example (Peters et al. 2018, Table 4): a sports play next to a theatre play.
"""

from __future__ import annotations

DEMO_SENTENCES: list[tuple[str, str, str]] = [
    # (word, sense, sentence)
    ("play", "play-sport", "Chico Ruiz made a spectacular play on Alusik's grounder."),
    ("play", "play-theatre", "Olivia De Havilland signed to do a Broadway play for Garson."),
    ("play", "play-theatre", "The play opens in London next week with a new cast."),
    ("play", "play-theatre", "We read the whole play aloud in our drama class."),
    ("play", "play-theatre", "Her second play was about a family running a small hotel."),
    ("play", "play-theatre", "The critics loved the play but the theatre was half empty."),
    ("play", "play-theatre", "He wrote a play in three acts and staged it himself."),
    ("play", "play-sport", "The shortstop turned a double play to end the inning."),
    ("play", "play-sport", "That was the best defensive play of the whole season."),
    ("play", "play-sport", "The referee reviewed the play and reversed the call."),
    ("play", "play-sport", "The quarterback called a running play on third down."),
    ("play", "play-music", "She will play the violin at the concert tonight."),
    ("play", "play-music", "Can you play that song on the piano again?"),
    ("play", "play-music", "The band used to play jazz in a small club downtown."),
    ("play", "play-music", "He learned to play the guitar when he was ten."),
    ("play", "play-music", "They play old records on the radio every Sunday morning."),
    ("play", "play-game", "The children play in the park after school."),
    ("play", "play-game", "Let's play chess after dinner."),
    ("play", "play-game", "The kids wanted to play outside in the snow."),
    ("play", "play-game", "We play cards with our neighbours on Fridays."),
    ("bank", "bank-finance", "She deposited her salary at the bank on Monday."),
    ("bank", "bank-finance", "The bank raised its interest rates again this year."),
    ("bank", "bank-finance", "He applied to the bank for a loan to buy a house."),
    ("bank", "bank-finance", "The central bank warned that inflation was rising."),
    ("bank", "bank-finance", "I need to call the bank about my credit card."),
    ("bank", "bank-finance", "The bank closed three branches in small towns."),
    ("bank", "bank-finance", "Customers queued outside the bank to withdraw cash."),
    ("bank", "bank-river", "We had a picnic on the bank of the river."),
    ("bank", "bank-river", "The boat drifted towards the muddy bank."),
    ("bank", "bank-river", "Reeds grew thick along the east bank of the stream."),
    ("bank", "bank-river", "The river burst its bank after days of heavy rain."),
    ("bank", "bank-river", "An old fisherman sat on the bank with his rod."),
    ("bank", "bank-river", "Ducks nested on the grassy bank of the canal."),
    ("bank", "bank-river", "They climbed down the steep bank to reach the water."),
    ("bat", "bat-animal", "A bat flew out of the cave at dusk."),
    ("bat", "bat-animal", "The bat hangs upside down while it sleeps."),
    ("bat", "bat-animal", "Every bat in the colony hunts insects at night."),
    ("bat", "bat-animal", "The biologist tagged a bat with a tiny radio transmitter."),
    ("bat", "bat-animal", "A frightened bat was trapped in the attic."),
    ("bat", "bat-animal", "The fruit bat has a wingspan of almost a metre."),
    ("bat", "bat-sport", "He swung the bat and hit the ball over the fence."),
    ("bat", "bat-sport", "The batter dropped his bat and ran to first base."),
    ("bat", "bat-sport", "She bought a new cricket bat made of willow."),
    ("bat", "bat-sport", "The coach handed him a lighter bat for practice."),
    ("bat", "bat-sport", "A broken bat flew into the stands during the game."),
    ("bat", "bat-sport", "He gripped the bat tightly and waited for the pitch."),
    ("spring", "spring-season", "The cherry trees blossom every spring in the park."),
    ("spring", "spring-season", "We planted tomatoes in the spring and picked them in August."),
    ("spring", "spring-season", "Spring came early this year and the snow melted in March."),
    ("spring", "spring-season", "The birds return from the south in spring."),
    ("spring", "spring-season", "The new term starts in the spring after the holidays."),
    ("spring", "spring-season", "It rained almost every day last spring."),
    ("spring", "spring-coil", "The spring in the old mattress poked through the fabric."),
    ("spring", "spring-coil", "A small steel spring pushes the button back up."),
    ("spring", "spring-coil", "The watchmaker replaced the broken spring in the clock."),
    ("spring", "spring-coil", "Compress the spring and release it to launch the ball."),
    ("spring", "spring-coil", "The door closes by itself because of a strong spring."),
    ("spring", "spring-water", "Fresh water bubbled up from a spring in the hillside."),
    ("spring", "spring-water", "The village gets its drinking water from a mountain spring."),
    ("spring", "spring-water", "They filled their bottles at a cold spring near the trail."),
    ("spring", "spring-water", "A hot spring feeds the pool behind the old hotel."),
    ("spring", "spring-water", "The spring dried up during the long summer drought."),
]


def demo_words() -> list[str]:
    return sorted({word for word, _, _ in DEMO_SENTENCES})
