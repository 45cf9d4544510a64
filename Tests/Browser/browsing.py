"""What the browser scripts share: a headless Chromium, checks that collect failures, waits for
a condition, screenshots, and the checks every console page passes (no dialog, no injected
element, and for the team's eyes no code, request id, setting name or id where a name belongs)."""
import os
import re
import subprocess
import sys

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


class Browsing:
    def __init__(self, base, shots):
        self.base, self.shots, self.failures = base, shots, []
        os.makedirs(shots, exist_ok=True)
        options = Options()
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1360,1000",
                         "--disable-dev-shm-usage"]:
            options.add_argument(argument)
        options.binary_location = os.environ.get("PIER_CHROMIUM", "/usr/bin/chromium")
        self.driver = webdriver.Chrome(
            service=Service(os.environ.get("PIER_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
        self.driver.set_page_load_timeout(30)

    def check(self, condition, what):
        if not condition:
            self.failures.append(what)
            print("FAIL:", what, file=sys.stderr)

    def wait_for(self, condition, what, seconds=20):
        """Waits (up to `seconds`) for a page the browser is loading: a click starts a navigation,
        it does not wait for it."""
        def holds(_):
            # While the next page loads, the elements of the last one go stale: not yet.
            try:
                return condition()
            except Exception:
                return False
        try:
            WebDriverWait(self.driver, seconds).until(holds)
        except Exception:
            self.check(False, what + " (waited %d s): " % seconds + self.driver.current_url)

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(self.shots, name + ".png"))

    def no_dialog(self, where):
        try:
            alert = self.driver.switch_to.alert
            self.check(False, "a dialog opened on " + where + ": " + alert.text)
            alert.dismiss()
        except NoAlertPresentException:
            pass

    def injected(self, where):
        """Elements no console page has: what a payload would have added."""
        scripts = self.driver.execute_script("return Array.from(document.scripts).map(s => s.getAttribute('src'))")
        self.check(scripts == ["/console/static/console.js"], where + ": scripts are " + repr(scripts))
        for selector in ["img", "svg", "iframe", "[onerror]", "[onload]", "a[href^='javascript']"]:
            self.check(not self.driver.find_elements(By.CSS_SELECTOR, selector), where + ": found " + selector)

    def in_words(self, where):
        """What the team reads on the page: no problem code, request id, setting name, or id
        where a name belongs (an id is one click away, in a link's address, never in the text)."""
        text = self.driver.find_element(By.TAG_NAME, "main").text
        self.check(not UUID.search(text), where + ": an id is shown: " + (UUID.search(text) or [""])[0])
        self.check("PIER_" not in text, where + ": a setting's name is shown")
        self.check(not re.search(r"\b[a-z]+_[a-z_]+\b", text), where + ": a code is shown: "
                   + repr(re.findall(r"\b[a-z]+_[a-z_]+\b", text)[:3]))
        self.check("Request " not in text and "request id" not in text.lower(), where + ": a request id is shown")
        self.check(not re.search(r"\bP[0-9]+[DWMY]\b", text), where + ": a period in ISO 8601 is shown")

    def quit(self):
        self.driver.quit()


def totp(secret, step=0):
    """The authenticator app's code `step` steps from now, by Tests/Interop/totp.py (RFC 6238 alone)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Interop", "totp.py")
    return subprocess.run([sys.executable, script, secret, str(step)], capture_output=True, text=True,
                          check=True).stdout.strip()
